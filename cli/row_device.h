// Which profile describes measurement rows: the device the rows say they ran on (their `device`
// column, docs/measurements.md), unless --gpu/--profile says otherwise, and then only for rows of
// that device. validate --measurements and fit share it, so a CPU row never becomes an H200 one.
#pragma once
#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "cli/hardware_args.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

struct RowDeviceOptions {
  std::string command;          ///< "validate" or "fit", for the messages
  bool allow_mismatch = false;  ///< --allow-device-mismatch: --gpu/--profile may describe another device
  /// fit: rows of the CPU (no embedded profile) refine lorasim's CPU base, the one `lorasim
  /// calibrate --device cpu` starts from; validate refuses them without a profile.
  bool cpu_base = false;
};

/// Throws InputError for rows of more than one process (`processes` > 1): `fit` fits one GPU's
/// terms, and a data-parallel step holds the all-reduce too (validate predicts such rows on
/// `processes` GPUs instead).
void refuse_several_processes(const std::vector<calib::Measurement>& rows, const std::string& command);

/// Throws InputError unless every row that names a device ran on the device `profile`
/// describes (`command`: "recommend --measured", for the message): rows that replace a profile's
/// predictions must be of its device, as validate and fit require.
void require_rows_of_profile(const std::vector<calib::Measurement>& rows, const hw::Profile& profile,
                             const std::string& command);

/// The profile for `rows`: --gpu/--profile when given (refused for rows of another device unless
/// allow_mismatch); else the embedded profile of the rows' device; else, for rows that name no
/// device (files written before the column), --gpu's default. Throws InputError for rows of
/// several devices and for a device no embedded profile describes, saying what to pass.
hw::Profile profile_for_rows(const std::vector<calib::Measurement>& rows, const HardwareArgs& args,
                             const RowDeviceOptions& options);

}  // namespace lorasim::cli
