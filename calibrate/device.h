// Which device calibration runs on: parsing --device, and what the machine is (for the
// hardware profile's header). No torch types here, so the CLI can use it without torch headers.
#pragma once
#include <cstdint>
#include <string>

#include "model/error.h"  // InputError, thrown by resolve_device

namespace lorasim::calib {

struct DeviceInfo {
  std::string spec;                 ///< resolved device: "cpu" or "cuda:N"
  bool is_cuda = false;             ///< spec names a CUDA device
  std::string name;                 ///< GPU name, or the CPU's "model name"
  int64_t total_memory_bytes = 0;   ///< device memory, or physical RAM on the CPU
  bool bf16_supported = false;      ///< native bf16 (CUDA compute capability 8.0 or newer)
  std::string driver_version;       ///< CUDA version the driver supports ("13.0"); "" on CPU
  std::string cuda_version;         ///< CUDA runtime LibTorch was built with ("13.0"); "" on CPU
  std::string torch_version;        ///< LibTorch version ("2.11.0")
};

/// Resolves "auto" (CUDA if a device is visible, else CPU), "cpu", "cuda" or "cuda:N".
/// Throws InputError with one line saying what to do when CUDA is asked for and this build
/// or this machine lacks it, or when the spec is malformed.
DeviceInfo resolve_device(const std::string& spec);

/// True when calibrate/ was built against a LibTorch with CUDA.
bool cuda_compiled();

/// The LibTorch version calibrate/ was compiled against ("1.13.0").
std::string torch_version();

}  // namespace lorasim::calib
