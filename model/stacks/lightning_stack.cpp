// The lightning stack's options and notes; its counts are hf-peft's (model/hf_analytics.cpp).
#include "model/stacks/lightning_stack.h"

#include <cstdio>

#include "model/error.h"

namespace lorasim::model {

StackSpec LightningStack::default_spec() const {
  StackSpec s;
  s.kind = kind();
  return s;
}

void LightningStack::validate(const StackSpec& spec) const {
  if (spec.fused_lm_head)
    throw InputError("the lightning stack's loss is the module's own (the model's loss over the full logits), not "
                     "TRL's fused LM head",
                     "stack");
}

std::string LightningStack::describe(const StackSpec& spec) const {
  char dropout[32];
  std::snprintf(dropout, sizeof dropout, "%g", spec.lora_dropout);
  return std::string(name()) + " (" + attn_impl_name(spec.attn_impl) + ", dropout " + dropout + ", " +
         (spec.autocast ? "mixed precision" : "true precision") + ", " + allocator_name(spec.allocator) +
         " allocator)";
}

std::string LightningStack::split_settings(const Workload& w, int64_t micro_batch, int64_t accumulation,
                                           bool grad_ckpt) const {
  // Lightning's precision flag: the forward under autocast ("-mixed") or the weights' own ("-true").
  const char* bits = w.train.precision == Precision::bf16 ? "bf16" : w.train.precision == Precision::fp16 ? "16" : "32";
  const std::string precision = std::string(bits) + (w.stack.autocast && bits[0] != '3' ? "-mixed" : "-true");
  return "Lightning: batch_size=" + std::to_string(micro_batch) +
         " (the LightningModule's or its datamodule's), Trainer(accumulate_grad_batches=" +
         std::to_string(accumulation) + ", precision=\"" + precision + "\"), gradient checkpointing " +
         (grad_ckpt ? "on (model.gradient_checkpointing_enable())" : "off");
}

std::string LightningStack::prior_note(const std::string& device_name, const std::string& time_error) const {
  return "the lightning stack's host terms on '" + device_name +
         "' are hf-peft's (a Trainer's step): host time may be off by ~" + time_error +
         " (run `lorasim calibrate --stack lightning` on this machine)";
}

std::string LightningStack::memory_note(const StackSpec& spec, bool, const std::string& memory_error) const {
  return std::string("memory of Transformers + PEFT as a Lightning step runs it (") + allocator_name(spec.allocator) +
         " allocator); `fits` adds " + memory_error;
}

}  // namespace lorasim::model
