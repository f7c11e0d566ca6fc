// Hugging Face Transformers + PEFT as a training stack: the counts of model/hf_analytics.h, and
// its own rows in [stack.hf-peft] on top of the device's.
#pragma once
#include "model/hf_analytics.h"
#include "model/training_stack.h"

namespace lorasim::model {

class HfPeftStack : public TrainingStack {
 public:
  const char* name() const override { return "hf-peft"; }
  std::vector<std::string> aliases() const override { return {"hf"}; }
  std::string summary() const override { return "Transformers/TRL + PEFT"; }
  StackSpec default_spec() const override;  // PEFT's and Trainer's defaults
  void validate(const StackSpec&) const override {}                // every option is the stack's
  std::string describe(const StackSpec& spec) const override;
  double memory_bound_bytes(const Workload& w, int64_t b) const override { return hf_memory_bound_bytes(w, b); }
  double loss_bytes(const Workload& w, int64_t b) const override { return hf_loss_bytes(w, b); }
  double host_ops(const Workload& w) const override { return hf_host_ops_per_micro_batch(w); }
  double recompute_ops(const Workload& w) const override { return hf_recompute_ops_per_micro_batch(w); }
  ActivationMemory activation_memory(const Workload& w, int64_t b) const override {
    return hf_activation_memory(w, b);
  }
  double extra_static_bytes(const Workload& w) const override { return hf_extra_static_bytes(w); }
  LossTile loss_tile(const Workload& w) const override { return fused_head_tile(w); }
  bool calibrates_device() const override { return false; }
  StackCalibration calibration() const override { return StackCalibration::hf_probe; }
  bool mixed_precision(const StackSpec& spec) const override { return spec.autocast; }  // Trainer's bf16/fp16
  std::string prior_note(const std::string& device_name, const std::string& time_error) const override;
  std::string memory_note(const StackSpec& spec, bool asynchronous, const std::string& memory_error) const override;
  std::string host_bound_note(const std::string& host_spread) const override;
};

}  // namespace lorasim::model
