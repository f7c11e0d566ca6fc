// PyTorch Lightning driving a Transformers + PEFT model (a LightningModule whose training_step
// returns the model's loss) as a training stack. The graph and its memory are the model code's,
// so the counts and most rows are hf-peft's. Its own rows ([stack.lightning]) are what the loop
// decides: the host time it adds (its hooks, the precision plugin, zero_grad, clipping, the
// closure around the optimizer step) and the device scales, since Trainer syncs on every
// micro-batch's loss and Lightning does not, so the device waits for the host differently. They
// are hf-peft's values on a GPU until `lorasim calibrate --stack lightning` measures them.
#pragma once
#include "model/stacks/hf_peft_stack.h"

namespace lorasim::model {

class LightningStack final : public HfPeftStack {
 public:
  const char* name() const override { return "lightning"; }
  std::vector<std::string> aliases() const override { return {"pytorch-lightning"}; }
  std::string summary() const override { return "PyTorch Lightning + Transformers + PEFT"; }
  const char* base_stack() const override { return "hf-peft"; }
  StackSpec default_spec() const override;  // precision "bf16-mixed": the forward under autocast
  void validate(const StackSpec& spec) const override;
  std::string describe(const StackSpec& spec) const override;
  /// "Lightning: batch_size=16 (...), Trainer(accumulate_grad_batches=1, precision=\"bf16-mixed\"), ..."
  std::string split_settings(const Workload& w, int64_t micro_batch, int64_t accumulation, bool grad_ckpt) const override;
  std::string prior_note(const std::string& device_name, const std::string& time_error) const override;
  std::string memory_note(const StackSpec& spec, bool asynchronous, const std::string& memory_error) const override;
};

}  // namespace lorasim::model
