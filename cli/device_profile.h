// The device a training command runs on, as hwprofiles/match.h describes devices.
#pragma once
#include "calibrate/device.h"
#include "hwprofiles/match.h"

namespace lorasim::cli {

inline hw::DeviceIdentity identity_of(const calib::DeviceInfo& device) {
  return {device.name, device.is_cuda, device.total_memory_bytes};
}

}  // namespace lorasim::cli
