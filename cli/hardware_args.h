// --gpu / --profile: which hardware profile a command uses.
#pragma once
#include <string>

#include "cli/option_table.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

struct HardwareArgs {
  std::string gpu = "h200";  ///< embedded profile name
  std::string profile;       ///< a profile TOML file (instead of --gpu)
  bool gpu_given = false;    ///< --gpu was on the command line (set by the table)
};
void add_hardware_options(OptionTable& table, HardwareArgs& args);
/// The profile --profile or --gpu names; both given is refused (one or the other).
hw::Profile select_profile(const HardwareArgs& args);

}  // namespace lorasim::cli
