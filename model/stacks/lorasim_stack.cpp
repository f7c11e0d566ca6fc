// The runner's notes; its counts are model/analytics.cpp's.
#include "model/stacks/lorasim_stack.h"

#include "model/error.h"

namespace lorasim::model {

// What the runner is: no dropout, no autocast, SDPA where LibTorch has it, expandable segments.
StackSpec LorasimStack::default_spec() const {
  StackSpec s;
  s.kind = kind();
  s.attn_impl = AttnImpl::sdpa;
  s.lora_dropout = 0.0;
  s.allocator = AllocatorMode::expandable;
  s.autocast = false;
  return s;
}

void LorasimStack::validate(const StackSpec& spec) const {
  if (spec.lora_dropout != 0.0)
    throw InputError("the lorasim stack has no LoRA dropout: the hf-peft stack models dropout", "stack");
  if (spec.autocast) throw InputError("the lorasim stack runs without autocast: the hf-peft stack models autocast", "stack");
  if (spec.fused_lm_head) throw InputError("the lorasim stack has no fused LM head: the hf-peft stack models TRL's", "stack");
  if (spec.attn_impl != AttnImpl::sdpa)
    throw InputError(std::string("the lorasim stack has one attention implementation (sdpa), not ") +
                     attn_impl_name(spec.attn_impl) + ": the hf-peft stack models the others", "stack");
}

std::string LorasimStack::quantized_base_refusal(const std::string& format) const {
  return std::string("the ") + name() + " stack has no " + format +
         " base (bitsandbytes is not in LibTorch): predict a quantized base with the hf-peft stack";
}

std::string LorasimStack::memory_note(const StackSpec&, bool asynchronous, const std::string&) const {
  if (!asynchronous) return "";
  return "reserved memory assumes PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (what "
         "`lorasim calibrate` runs with); PyTorch's default allocator can hold up to one "
         "more fp32 logits buffer (b x seq x vocab x 4 bytes)";
}

}  // namespace lorasim::model
