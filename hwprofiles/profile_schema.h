// Private to hwprofiles/: the profile schema (the [gpu] numbers, and every stored value of the
// coefficient table, model/coefficients.h, in its section) and the range checks that reading
// and validating share. The reader is profile_read.cpp, the writer profile_write.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "hwprofiles/profile.h"
#include "model/coefficients.h"

namespace lorasim::hw::detail {

/// One number of the schema: a datasheet figure or one of the table's stored values.
struct NumberField {
  std::string section;
  const char* key;
  model::Range range;
  bool bytes;  ///< written as an integer when it holds one (byte counts read better that way)
  /// A file without the key keeps the prior: a row added after profiles were written, or any
  /// key of a stack's own section (the section and its keys are optional).
  bool optional;
  double* (*field)(model::HardwareModel&);  ///< [gpu] numbers
  int slot;                                 ///< the table's values: the index in HardwareModel::values
  const model::StoredValue* stored;         ///< the table's values: the row and stack

  double& of(model::HardwareModel& hw) const {
    if (slot < 0) return *field(hw);
    if (static_cast<size_t>(slot) >= hw.values.size()) model::complete_values(hw);
    return hw.values[static_cast<size_t>(slot)];
  }
};

/// Every number of the schema, in the order to_toml writes them within a section.
const std::vector<NumberField>& number_fields();

/// Keys that are not plain numbers, per section (read and written by hand).
extern const std::vector<std::string> kGpuOtherKeys;
extern const std::vector<std::string> kProfileOtherKeys;
extern const std::vector<std::string> kTopLevelKeys;
/// Keys of the optional [interconnect] table (every one required when the table is there).
extern const std::vector<std::string> kInterconnectKeys;
/// Keys of a stack's own section besides its numbers.
extern const std::vector<std::string> kStackOtherKeys;

/// Every key a section may hold.
std::vector<std::string> known_keys(const std::string& section);
/// "[section].key", or "key" at the top level.
std::string key_path(const std::string& section, const std::string& key);

/// A stack's own section ("stack.hf-peft"), optional in a profile, and the stack it is of.
struct StackSection {
  std::string section;
  model::StackKind stack;
};
/// Every stack section the table has, in table order.
const std::vector<StackSection>& stack_sections();
/// Whether a profile writes `s`: values that are not the table's priors, or its own provenance.
bool writes_stack_section(const model::HardwareModel& hw, const StackSection& s);

/// Returns the message prefix for a key path: "file:line:column: " or "file: ".
using Locator = std::function<std::string(const std::string& path)>;
/// The range and consistency rules of the schema; throws ConfigError naming the key path.
void check_ranges(const Profile& p, const Locator& where);

/// Shortest text that reads back as exactly `v`, always in TOML float syntax.
std::string format_double(double v);

}  // namespace lorasim::hw::detail
