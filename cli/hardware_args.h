// --gpu / --profile: which hardware profile a command uses.
#pragma once
#include <string>

#include "cli/args.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

struct HardwareArgs {
  std::string gpu = "h200";  ///< embedded profile name
  std::string profile;       ///< a profile TOML file (overrides --gpu)
};
void add_hardware_options(po::options_description& desc, HardwareArgs& args);
hw::Profile select_profile(const HardwareArgs& args);

}  // namespace lorasim::cli
