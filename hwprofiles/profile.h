// A hardware profile: the versioned TOML file (docs/profile-schema.md) that carries a device's
// datasheet figures and cost-model coefficients, read into model::HardwareModel and written
// back (by calibrate) without losing anything.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "model/hardware.h"

namespace lorasim::hw {

/// The schema this lorasim reads and writes. Files with a larger number are refused rather
/// than half-read: a newer field could change what the old ones mean.
inline constexpr int kSchemaVersion = 1;

/// One [calibration] value. Integers and floats stay distinct so a file round-trips exactly.
using CalibrationValue = std::variant<std::string, int64_t, double, bool>;

/// The optional [calibration] table: provenance written by `lorasim calibrate` (date, device,
/// driver and library versions, plan, residuals). Free-form on purpose: the simulator never
/// reads it, so new entries need no schema change. Entries keep file order.
struct CalibrationInfo {
  std::vector<std::pair<std::string, CalibrationValue>> entries;

  bool empty() const { return entries.empty(); }
  /// The value stored under `key`, or nullptr.
  const CalibrationValue* find(const std::string& key) const;
  /// Replaces the value under `key`, or appends it.
  void set(const std::string& key, CalibrationValue value);
};

struct Profile {
  int schema_version = kSchemaVersion;
  model::HardwareModel hw;
  std::string source_text_name;  ///< where it came from, for messages: "builtin:h200.toml", a path
  std::string origin_source;     ///< [profile].source: "datasheet prior", "lorasim calibrate ..."
  CalibrationInfo calibration;
};

/// Field-by-field equality, every field of the profile and of model::HardwareModel.
bool operator==(const Profile& a, const Profile& b);
bool operator!=(const Profile& a, const Profile& b);
bool operator==(const CalibrationInfo& a, const CalibrationInfo& b);

/// Parses and validates a profile. `source_name` prefixes every message
/// ("builtin:h200.toml:12:15: [time].gemm_tflops must be > 0 (got -1)").
/// Throws ConfigError for malformed TOML, a newer schema_version, missing, unknown or
/// mistyped keys and out-of-range values.
Profile parse_profile(std::string_view toml_text, const std::string& source_name);

/// Reads and parses the file at `path` (used as the source name). Throws ConfigError.
Profile load_profile_file(const std::string& path);

/// Checks the range and consistency rules of the schema on an in-memory profile (what
/// parse_profile checks after reading the types). Throws ConfigError naming the key path.
void validate_profile(const Profile& profile);

/// The profile as TOML in schema order. Doubles are written in their shortest exact form, so
/// parse_profile(to_toml(p), name) == p whenever p.source_text_name == name.
std::string to_toml(const Profile& profile);

/// Validates `profile` and writes it to `path` by model::write_file_atomically's rules
/// (model/atomic_file.h): a regular file is replaced whole through an exclusive temporary,
/// flushed and renamed, so readers see the old file or the new one; a character device or FIFO
/// is written in place; a symlink to a file, a directory or another special file is refused.
/// Throws ConfigError, leaving no temporary behind.
void write_profile_file(const Profile& profile, const std::string& path);

}  // namespace lorasim::hw
