#include "hwprofiles/match.h"

#include <cctype>
#include <cstdlib>
#include <vector>

#include "hwprofiles/builtin.h"

namespace lorasim::hw {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "h100-sxm" -> "h100", "a100-80gb" -> "a100": the model token a device name contains.
std::string model_token(const std::string& builtin_name) { return builtin_name.substr(0, builtin_name.find('-')); }

// `token` as a whole word of `device_name` ("a10g" is not in "a100"), case-insensitively.
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

std::string matching_builtin_name(const DeviceIdentity& device) {
  if (!device.is_gpu) return "";
  std::string best;
  int64_t best_gap = 0;
  for (const auto& name : builtin_profile_names()) {
    if (!has_token(device.name, model_token(name))) continue;
    const int64_t gap = std::llabs(builtin_profile(name).hw.memory_bytes - device.memory_bytes);
    if (best.empty() || gap < best_gap) {
      best = name;
      best_gap = gap;
    }
  }
  return best;
}

Profile base_profile_for(const DeviceIdentity& device) {
  Profile p;
  if (device.is_gpu) {
    if (const std::string name = matching_builtin_name(device); !name.empty()) {
      p = builtin_profile(name);
    } else {
      p.hw.name = "cuda-gpu";
      p.hw.display_name = device.name;
      p.origin_source = "lorasim calibrate";
    }
    p.hw.memory_bytes = device.memory_bytes;  // what this card really has
    return p;
  }
  p.hw.name = "cpu";
  p.hw.display_name = device.name.empty() ? "CPU" : device.name;
  p.hw.memory_bytes = device.memory_bytes;
  p.hw.bf16_supported = false;
  p.hw.overlap = model::Overlap::sum;  // the CPU executes each operator as it is dispatched
  p.hw.coefficients_precision = model::Precision::fp32;
  p.hw.value("context_bytes") = 0;
  return p;
}

bool same_device_model(const Profile& profile, const DeviceIdentity& device) {
  if (!device.is_gpu) return profile.hw.name == "cpu";
  return has_token(device.name, model_token(profile.hw.name)) || lower(profile.hw.display_name) == lower(device.name);
}

}  // namespace lorasim::hw
