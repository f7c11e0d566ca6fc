// The precision policy of training runs (see precision.h).
#include "calibrate/precision.h"

namespace lorasim::calib {

PrecisionChoice resolve_precision(const std::string& requested, const DeviceInfo& device) {
  if (requested != "auto") return resolve_precision(model::parse_precision(requested), device);
  if (!device.is_cuda) return {model::Precision::fp32, ""};
  return {device.bf16_supported ? model::Precision::bf16 : model::Precision::fp16, ""};
}

PrecisionChoice resolve_precision(model::Precision requested, const DeviceInfo& device) {
  if (!device.is_cuda) {
    if (requested == model::Precision::fp32) return {requested, ""};
    return {model::Precision::fp32,
            std::string("the CPU trains in fp32, not ") + model::precision_name(requested)};
  }
  if (requested == model::Precision::bf16 && !device.bf16_supported)
    return {requested, device.name + " has no native bf16: expect slow steps (fp16 is the fast choice here)"};
  return {requested, ""};
}

}  // namespace lorasim::calib
