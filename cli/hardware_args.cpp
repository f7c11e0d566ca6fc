#include "cli/hardware_args.h"

#include "hwprofiles/builtin.h"

namespace lorasim::cli {

void add_hardware_options(po::options_description& desc, HardwareArgs& a) {
  desc.add_options()
      ("gpu", po::value(&a.gpu)->default_value(a.gpu), "embedded GPU profile (see `lorasim profiles`)")
      ("profile", po::value(&a.profile), "hardware profile TOML file, e.g. from `lorasim calibrate` (overrides --gpu)");
}

hw::Profile select_profile(const HardwareArgs& a) {
  return a.profile.empty() ? hw::builtin_profile(a.gpu) : hw::load_profile_file(a.profile);
}

}  // namespace lorasim::cli
