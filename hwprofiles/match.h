// Which profile describes a device that calibrate or validate runs on: the embedded profile
// of the same GPU model when there is one, else a generic one with the device's own figures.
#pragma once
#include <cstdint>
#include <string>

#include "hwprofiles/profile.h"

namespace lorasim::hw {

/// A device as the machine describes it (calibrate/device.h reads it off LibTorch).
struct DeviceIdentity {
  std::string name;           ///< "NVIDIA H200" as CUDA reports it, or the CPU's model name
  bool is_gpu = false;
  int64_t memory_bytes = 0;   ///< device memory, or physical RAM for the CPU
};

/// The embedded profile's name whose GPU model `device` names ("h100-sxm" for "NVIDIA H100
/// 80GB HBM3"), the closest memory size winning among several (A100 40/80 GB); "" for none
/// and for the CPU.
std::string matching_builtin_name(const DeviceIdentity& device);

/// The datasheet side of a profile for `device`: the matching embedded profile with the
/// device's real memory, a generic "cuda-gpu" for an unknown GPU, or "cpu" (synchronous,
/// fp32, no context) for the CPU; prior coefficients throughout.
Profile base_profile_for(const DeviceIdentity& device);

/// True when `profile` describes the same device model (GPU names compared loosely; any
/// "cpu" profile for the CPU).
bool same_device_model(const Profile& profile, const DeviceIdentity& device);

}  // namespace lorasim::hw
