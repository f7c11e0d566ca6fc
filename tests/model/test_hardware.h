// A synthetic device for unit tests, independent of the embedded profiles.
#pragma once
#include <string_view>

#include "model/cost_model.h"
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
  hw.value("host_fixed_s") = 1e-3;
  hw.value("host_per_op_s") = 8e-6;
  hw.value("device_fixed_s") = 1e-4;
  hw.value("gemm_tflops") = 500;
  hw.value("gemm_half_tokens") = 256;
  hw.value("head_tflops") = 700;
  hw.value("attention_tflops") = 300;
  hw.value("memory_gbps") = 2500;
  hw.value("loss_gbps") = 3000;
  hw.value("per_kernel_s") = 3e-6;
  hw.value("optimizer_fixed_s") = 1e-3;
  hw.value("optimizer_per_tensor_s") = 5e-5;
  hw.value("optimizer_device_per_tensor_s") = 2e-5;
  hw.value("optimizer_per_param_s") = 1e-11;
  hw.value("workspace_bytes") = 1 << 27;
  hw.value("reserved_scale") = 1.05;
  hw.value("reserved_overhead_bytes") = 1 << 28;
  hw.value("context_bytes") = 1 << 29;
  hw.calibrated = true;
  return hw;
}

}  // namespace lorasim::testing

namespace lorasim::testing {

/// `hw` resolved for lorasim's runner: the device's [time] and [memory] values as they stand.
inline model::StackModel runner(const model::HardwareModel& hw) {
  return model::stack_model(hw, model::StackKind::lorasim);
}

}  // namespace lorasim::testing

namespace lorasim::testing {

/// A row's value as lorasim's runner reads it from `hw` (its prior when the runner stores none).
inline double of(const model::Coefficient& c, const model::HardwareModel& hw) {
  return hw.value(c, model::StackKind::lorasim);
}
inline double& of(const model::Coefficient& c, model::HardwareModel& hw) {
  return hw.value(c, model::StackKind::lorasim);
}
/// Whether the runner stores the row in [time].
inline bool in_time(const model::Coefficient& c) {
  const model::StackEntry& e = c.in(model::StackKind::lorasim);
  return c.owned_by(model::StackKind::lorasim) && std::string_view(e.section) == "time";
}
/// Every value the runner stores in `section` at its prior.
inline void reset_section(model::HardwareModel& hw, std::string_view section) {
  for (const model::Coefficient& c : model::coefficient_table())
    if (c.owned_by(model::StackKind::lorasim) && c.in(model::StackKind::lorasim).section == section)
      of(c, hw) = c.in(model::StackKind::lorasim).prior;
}
inline void reset_time(model::HardwareModel& hw) { reset_section(hw, "time"); }
inline void reset_memory(model::HardwareModel& hw) { reset_section(hw, "memory"); }

}  // namespace lorasim::testing
