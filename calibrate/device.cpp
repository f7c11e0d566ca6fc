// Device resolution and description: CUDA properties through the CUDA runtime, the CPU's
// through /proc/cpuinfo and sysconf.
#include "calibrate/device.h"

#include <unistd.h>

#include <cctype>
#include <fstream>

#include <torch/cuda.h>
#include <torch/version.h>

#ifdef LORASIM_TORCH_CUDA
#include <cuda_runtime_api.h>
#endif

#include "model/error.h"

namespace lorasim::calib {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return trim(line.substr(colon + 1));
    }
  }
  return "unknown CPU";
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
}

#ifdef LORASIM_TORCH_CUDA
// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
#endif

DeviceInfo describe_cpu() {
  DeviceInfo d;
  d.spec = "cpu";
  d.is_cuda = false;
  d.name = cpu_model_name();
  d.total_memory_bytes = physical_memory_bytes();
  d.torch_version = torch_version();
  return d;
}

DeviceInfo describe_cuda(const std::string& asked, int64_t index) {
  if (!cuda_compiled())
    throw InputError("device " + asked +
                     ": this lorasim was built against a LibTorch without CUDA; rebuild with a "
                     "CUDA LibTorch in CMAKE_PREFIX_PATH, or train on the cpu device", "device");
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (count == 0)
    throw InputError("device " + asked +
                     ": no CUDA device is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES), "
                     "or train on the cpu device", "device");
  if (index >= count)
    throw InputError("device " + asked + ": only " + std::to_string(count) +
                     " CUDA device(s) are visible, so the index must be below " +
                     std::to_string(count), "device");
  DeviceInfo d;
  d.spec = "cuda:" + std::to_string(index);
  d.is_cuda = true;
  d.torch_version = torch_version();
#ifdef LORASIM_TORCH_CUDA
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, static_cast<int>(index)) == cudaSuccess) {
    d.name = prop.name;
    d.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.bf16_supported = prop.major >= 8;  // Ampere; a T4 (7.5) emulates bf16
  }
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) d.driver_version = cuda_version_string(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) d.cuda_version = cuda_version_string(v);
#endif
  return d;
}

}  // namespace

bool cuda_compiled() {
#ifdef LORASIM_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

std::string torch_version() { return TORCH_VERSION; }

DeviceInfo resolve_device(const std::string& spec) {
  if (spec == "auto")
    return cuda_compiled() && torch::cuda::is_available() ? describe_cuda("auto", 0)
                                                          : describe_cpu();
  if (spec == "cpu") return describe_cpu();
  if (spec == "cuda") return describe_cuda(spec, 0);
  const std::string prefix = "cuda:";
  if (spec.rfind(prefix, 0) == 0 && spec.size() > prefix.size() && spec.size() < prefix.size() + 4) {
    const std::string digits = spec.substr(prefix.size());
    bool all_digits = true;
    for (char c : digits) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
    if (all_digits) return describe_cuda(spec, std::stoll(digits));
  }
  throw InputError("device " + quoted_excerpt(spec) + ": expected auto, cpu, cuda or cuda:N (N a GPU index)", "device");
}

}  // namespace lorasim::calib
