// The datasheet side of a profile for the device calibrate/validate run on: the embedded
// profile of the same GPU model when there is one, else figures read off the device.
#pragma once
#include "calibrate/device.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

/// The embedded profile matching `device` (by GPU model name and memory), or a generic one
/// ("cpu" for the CPU: synchronous, fp32), with its datasheet figures and prior coefficients.
hw::Profile base_profile_for(const calib::DeviceInfo& device);

/// True when `profile` describes the same GPU model as `device` (names compared loosely).
bool same_gpu_model(const hw::Profile& profile, const calib::DeviceInfo& device);

}  // namespace lorasim::cli
