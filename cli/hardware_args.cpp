// --gpu / --profile: which hardware profile a command uses, with errors that say which flag
// a name belongs to.
#include "cli/hardware_args.h"

#include <filesystem>

#include "hwprofiles/builtin.h"
#include "model/error.h"

namespace lorasim::cli {
namespace {

std::string builtin_names() {
  std::string names;
  for (const auto& n : hw::builtin_profile_names()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

// The embedded profile `name` refers to, or "" when it names none.
std::string builtin_name_of(const std::string& name) {
  try {
    return hw::canonical_builtin_name(name);
  } catch (const InputError&) {
    return "";
  }
}

}  // namespace

void add_hardware_options(OptionTable& t, HardwareArgs& a) {
  t.custom("gpu", a.gpu, [&a](const std::string& gpu) {
     // Else the nearest name to "" is the shortest one, and the error would suggest it.
     if (gpu.empty())
       throw InputError("--gpu is empty: give one of " + builtin_names() + " (see `lorasim profiles`)");
     a.gpu = gpu;
     a.gpu_given = true;
   }, "embedded GPU profile (see `lorasim profiles`)")
      .quantity("gpu", "(see `lorasim profiles`, or pass --profile FILE)")
      .custom("profile", "", [&a](const std::string& file) {
        // Else an empty path reads as "no --profile" and the --gpu default is used silently.
        if (file.empty())
          throw InputError("--profile is empty: give a profile TOML file, or leave it out and use --gpu");
        a.profile = file;
      }, "hardware profile TOML file, e.g. from `lorasim calibrate` (instead of --gpu)")
      .quantity("profile", "(give a profile TOML file, or --gpu NAME for an embedded profile; see `lorasim profiles`)");
}

hw::Profile select_profile(const HardwareArgs& a) {
  if (a.profile.empty()) return hw::builtin_profile(a.gpu);
  // Both would leave the reader guessing which one the numbers came from.
  if (a.gpu_given)
    throw InputError("--gpu " + a.gpu + " and --profile " + a.profile +
                     " both name the hardware: give one or the other (--profile holds a GPU's own figures)");
  // --profile takes a file only: a file called "h200" next to the user must not change what
  // `--profile h200` means, so an embedded name is pointed at --gpu instead of accepted.
  std::error_code ec;
  if (!std::filesystem::exists(a.profile, ec)) {
    const std::string builtin = builtin_name_of(a.profile);
    if (!builtin.empty())
      throw InputError("--profile '" + a.profile + "': no such file; '" + builtin +
                       "' is an embedded profile: use --gpu " + builtin);
    throw ConfigError("--profile '" + a.profile +
                      "': no such file (give a profile TOML file, or --gpu NAME for an embedded profile; "
                      "see `lorasim profiles`)");
  }
  return hw::load_profile_file(a.profile);
}

}  // namespace lorasim::cli
