// The hf-peft stack's notes; its counts are model/hf_analytics.cpp's.
#include "model/stacks/hf_peft_stack.h"

#include <cstdio>

namespace lorasim::model {

StackSpec HfPeftStack::default_spec() const {
  StackSpec s;
  s.kind = kind();
  return s;
}

std::string HfPeftStack::describe(const StackSpec& spec) const {
  char dropout[32];
  std::snprintf(dropout, sizeof dropout, "%g", spec.lora_dropout);
  return std::string(name()) + " (" + attn_impl_name(spec.attn_impl) + ", dropout " + dropout + ", " +
         (spec.autocast ? "autocast" : "no autocast") + ", " + allocator_name(spec.allocator) + " allocator" +
         (spec.fused_lm_head ? ", fused LM head" : "") + ")";
}

std::string HfPeftStack::prior_note(const std::string& device_name, const std::string& time_error) const {
  return "the hf-peft stack's terms of '" + device_name +
         "' are priors (the H200's calibration): host time may be off by ~" + time_error +
         " (run `lorasim calibrate --stack hf-peft` on this machine)";
}

std::string HfPeftStack::memory_note(const StackSpec& spec, bool, const std::string& memory_error) const {
  return std::string("memory of Transformers + PEFT as a Trainer step runs it (") + allocator_name(spec.allocator) +
         " allocator); `fits` adds " + memory_error;
}

std::string HfPeftStack::host_bound_note(const std::string& host_spread) const {
  return "host-bound splits vary with the CPU's speed: their range is ±" + host_spread +
         " (host_spread of the profile) on a machine like the calibration's; another machine's CPU can differ by "
         "far more (docs/cost-model.md, \"Range\"): `lorasim calibrate --stack " +
         std::string(name()) + "` or the tuner measures yours";
}

}  // namespace lorasim::model
