// lorasim's own LibTorch runner (calibrate/) as a training stack: the counts of
// model/analytics.h, and the device rows its calibration fits.
#pragma once
#include "model/training_stack.h"

namespace lorasim::model {

class LorasimStack final : public TrainingStack {
 public:
  const char* name() const override { return "lorasim"; }
  StackSpec default_spec() const override;
  void validate(const StackSpec& spec) const override;
  std::string describe(const StackSpec&) const override { return std::string(name()) + " (LibTorch runner)"; }
  double memory_bound_bytes(const Workload& w, int64_t b) const override { return model::memory_bound_bytes(w, b); }
  double loss_bytes(const Workload& w, int64_t b) const override { return model::loss_bytes(w, b); }
  double host_ops(const Workload& w) const override { return host_ops_per_micro_batch(w); }
  double recompute_ops(const Workload& w) const override { return recompute_ops_per_micro_batch(w); }
  ActivationMemory activation_memory(const Workload& w, int64_t b) const override {
    return model::activation_memory(w, b);
  }
  double extra_static_bytes(const Workload&) const override { return 0.0; }
  bool calibrates_device() const override { return true; }
  StackCalibration calibration() const override { return StackCalibration::runner; }
  std::string quantized_base_refusal(const std::string& format) const override;
  bool mixed_precision(const StackSpec&) const override { return true; }  // the runner sets its own precision
  std::string prior_note(const std::string&, const std::string&) const override { return ""; }
  std::string memory_note(const StackSpec&, bool asynchronous, const std::string&) const override;
  std::string host_bound_note(const std::string&) const override { return ""; }
};

}  // namespace lorasim::model
