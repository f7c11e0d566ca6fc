#include "cli/device_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "hwprofiles/builtin.h"

namespace lorasim::cli {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "h100-sxm" -> "h100", "a100-80gb" -> "a100": the model token a device name contains.
std::string model_token(const std::string& builtin_name) { return builtin_name.substr(0, builtin_name.find('-')); }

bool has_token(const std::string& device_name, const std::string& token) {
  const std::string d = lower(device_name);
  size_t pos = 0;
  while ((pos = d.find(token, pos)) != std::string::npos) {
    const bool left = pos == 0 || !std::isalnum(static_cast<unsigned char>(d[pos - 1]));
    const size_t end = pos + token.size();
    const bool right = end == d.size() || !std::isalnum(static_cast<unsigned char>(d[end]));
    if (left && right) return true;
    pos = end;
  }
  return false;
}

}  // namespace

hw::Profile base_profile_for(const calib::DeviceInfo& device) {
  if (device.is_cuda) {
    const hw::Profile* best = nullptr;
    std::vector<hw::Profile> matches;
    for (const auto& name : hw::builtin_profile_names())
      if (has_token(device.name, model_token(name))) matches.push_back(hw::builtin_profile(name));
    // Several memory sizes of one model (A100 40/80 GB): the closest memory wins.
    for (const auto& p : matches)
      if (!best || std::llabs(p.hw.memory_bytes - device.total_memory_bytes) <
                       std::llabs(best->hw.memory_bytes - device.total_memory_bytes))
        best = &p;
    if (best) {
      hw::Profile p = *best;
      p.hw.memory_bytes = device.total_memory_bytes;  // what this card really has
      return p;
    }
    hw::Profile p;
    p.hw.name = "cuda-gpu";
    p.hw.display_name = device.name;
    p.hw.memory_bytes = device.total_memory_bytes;
    p.origin_source = "lorasim calibrate";
    return p;
  }
  hw::Profile p;
  p.hw.name = "cpu";
  p.hw.display_name = device.name.empty() ? "CPU" : device.name;
  p.hw.memory_bytes = device.total_memory_bytes;
  p.hw.bf16_supported = false;
  p.hw.overlap = model::Overlap::sum;  // the CPU executes each operator as it is dispatched
  p.hw.coefficients_precision = model::Precision::fp32;
  p.hw.memory.context_bytes = 0;
  return p;
}

bool same_gpu_model(const hw::Profile& profile, const calib::DeviceInfo& device) {
  if (!device.is_cuda) return profile.hw.name == "cpu";
  return has_token(device.name, model_token(profile.hw.name)) || lower(profile.hw.display_name) == lower(device.name);
}

}  // namespace lorasim::cli
