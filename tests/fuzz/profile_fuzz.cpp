// libFuzzer target: hardware profile TOML (hw::parse_profile). A ConfigError is the expected
// rejection; any other exception, crash or sanitizer report is a finding. An accepted profile
// must also round-trip through to_toml exactly, as profile.h promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hwprofiles/profile.h"
#include "model/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string source = "fuzz.toml";
  lorasim::hw::Profile profile;
  try {
    profile = lorasim::hw::parse_profile(text, source);
  } catch (const lorasim::Error&) {
    return 0;
  }
  // Written out and read back, an accepted profile is the same profile; a throw here escapes
  // and is reported too (a profile we wrote that we cannot read).
  const std::string written = lorasim::hw::to_toml(profile);
  if (lorasim::hw::parse_profile(written, source) != profile) std::abort();
  return 0;
}
