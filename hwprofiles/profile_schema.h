// Private to hwprofiles/: the profile schema (the [gpu] and [profile] numbers, and the [time]
// and [memory] keys from model/coefficients.h) and the range checks that reading and
// validating share. The reader is profile_read.cpp, the writer profile_write.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "hwprofiles/profile.h"
#include "model/coefficients.h"

namespace lorasim::hw::detail {

/// One number of the schema: a datasheet figure, an expected error or a coefficient.
struct NumberField {
  const char* section;
  const char* key;
  model::Range range;
  bool bytes;  ///< written as an integer when it holds one (byte counts read better that way)
  /// Added within schema 1 after profiles were written: a file without the key keeps the
  /// default of model::HardwareModel, which reproduces what those profiles predicted.
  bool optional;
  double* (*field)(model::HardwareModel&);  ///< [gpu] and [profile] numbers
  const model::Coefficient* coefficient;    ///< [time] and [memory]: the table's entry

  double& of(model::HardwareModel& hw) const { return coefficient ? coefficient->of(hw) : *field(hw); }
};

/// Every number of the schema, in the order to_toml writes them within a section.
const std::vector<NumberField>& number_fields();

/// Keys that are not plain numbers, per section (read and written by hand).
extern const std::vector<std::string> kGpuOtherKeys;
extern const std::vector<std::string> kProfileOtherKeys;
extern const std::vector<std::string> kTopLevelKeys;

/// Every key a section may hold.
std::vector<std::string> known_keys(const std::string& section);
/// "[section].key", or "key" at the top level.
std::string key_path(const std::string& section, const std::string& key);
/// The hf-peft stack's table, [stack.hf-peft] (model/stack_terms.h): optional, every key too.
inline const std::string kHfPeftSection = "stack.hf-peft";
/// Whether a profile writes [stack.hf-peft]: terms that are not the built-in priors.
bool writes_stack_terms(const model::StackTerms& t);

/// Returns the message prefix for a key path: "file:line:column: " or "file: ".
using Locator = std::function<std::string(const std::string& path)>;
/// The range and consistency rules of the schema; throws ConfigError naming the key path.
void check_ranges(const Profile& p, const Locator& where);

/// Shortest text that reads back as exactly `v`, always in TOML float syntax.
std::string format_double(double v);

}  // namespace lorasim::hw::detail
