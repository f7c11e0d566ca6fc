// The hardware profiles compiled into lorasim (hwprofiles/*.toml, embedded at build time by
// cmake/embed_profiles.cmake), so the simulator answers with no GPU and no files.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "hwprofiles/profile.h"

namespace lorasim::hw {

struct BuiltinProfile {
  std::string name;       ///< file stem, also the profile's [gpu].name: "h200"
  std::string_view toml;  ///< the file's text as it was at build time (static storage)
};

/// Every embedded profile, in a stable order (oldest GPU first).
const std::vector<BuiltinProfile>& builtin_profile_texts();

/// The names of builtin_profile_texts(), same order.
std::vector<std::string> builtin_profile_names();

/// The builtin name a user's spelling refers to: case-insensitive, with ' ' or '_' for '-'
/// and an optional "NVIDIA"/"Tesla" prefix ("NVIDIA H200" -> "h200", "Tesla T4" -> "t4").
/// Deliberately no guessing between variants: "a100" (40 or 80 GB?) and "h100" (the SXM
/// profile is wrong for a PCIe card) are refused with a suggestion. Throws InputError.
std::string canonical_builtin_name(const std::string& name);

/// Parses the embedded profile `name` (see canonical_builtin_name) with the source name
/// "builtin:<name>.toml". Throws InputError for an unknown name.
Profile builtin_profile(const std::string& name);

}  // namespace lorasim::hw
