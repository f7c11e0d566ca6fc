#include "model/hardware.h"

namespace lorasim::model {

double HardwareModel::peak_tflops(Precision p) const {
  switch (p) {
    case Precision::bf16: return peak_bf16_tflops;
    case Precision::fp16: return peak_fp16_tflops;
    case Precision::fp32: return peak_fp32_tflops;
  }
  return 0;
}

}  // namespace lorasim::model
