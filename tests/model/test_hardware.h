// A synthetic device for unit tests, independent of the embedded profiles.
#pragma once
#include "model/hardware.h"

namespace lorasim::testing {

inline model::HardwareModel test_gpu() {
  model::HardwareModel hw;
  hw.name = "test-gpu";
  hw.display_name = "Test GPU";
  hw.memory_bytes = 80LL << 30;
  hw.peak_bf16_tflops = 1000;
  hw.peak_fp16_tflops = 1000;
  hw.peak_fp32_tflops = 60;
  hw.hbm_bandwidth_gbps = 4000;
  hw.time.host_fixed_s = 1e-3;
  hw.time.host_per_op_s = 8e-6;
  hw.time.device_fixed_s = 1e-4;
  hw.time.gemm_tflops = 500;
  hw.time.gemm_half_tokens = 256;
  hw.time.head_tflops = 700;
  hw.time.attention_tflops = 300;
  hw.time.memory_gbps = 2500;
  hw.time.loss_gbps = 3000;
  hw.time.per_kernel_s = 3e-6;
  hw.time.optimizer_fixed_s = 1e-3;
  hw.time.optimizer_per_tensor_s = 5e-5;
  hw.time.optimizer_device_per_tensor_s = 2e-5;
  hw.time.optimizer_per_param_s = 1e-11;
  hw.memory.workspace_bytes = 1 << 27;
  hw.memory.reserved_scale = 1.05;
  hw.memory.reserved_overhead_bytes = 1 << 28;
  hw.memory.context_bytes = 1 << 29;
  hw.calibrated = true;
  return hw;
}

}  // namespace lorasim::testing
