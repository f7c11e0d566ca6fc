// Stack names, parsing and validation.
#include "model/stack.h"

#include <cmath>
#include <cstdio>

#include "model/error.h"

namespace lorasim::model {

StackSpec StackSpec::lorasim_runner() {
  StackSpec s;
  s.kind = StackKind::lorasim;
  s.attn_impl = AttnImpl::sdpa;
  s.lora_dropout = 0.0;
  s.allocator = AllocatorMode::expandable;
  s.autocast = false;
  return s;
}

void StackSpec::validate() const {
  if (!(lora_dropout >= 0.0 && lora_dropout < 1.0))
    throw InputError("LoRA dropout must be in [0, 1), got " + std::to_string(lora_dropout));
  if (kind == StackKind::lorasim) {
    if (lora_dropout != 0.0)
      throw InputError("the lorasim stack has no LoRA dropout: the hf-peft stack models dropout", "stack");
    if (autocast)
      throw InputError("the lorasim stack runs without autocast: the hf-peft stack models autocast", "stack");
    if (fused_lm_head)
      throw InputError("the lorasim stack has no fused LM head: the hf-peft stack models TRL's", "stack");
    if (attn_impl != AttnImpl::sdpa)
      throw InputError(std::string("the lorasim stack has one attention implementation (sdpa), not ") +
                       attn_impl_name(attn_impl) + ": the hf-peft stack models the others", "stack");
  }
}

std::string StackSpec::describe() const {
  if (kind == StackKind::lorasim) return std::string(stack_name(kind)) + " (LibTorch runner)";
  char dropout[32];
  std::snprintf(dropout, sizeof dropout, "%g", lora_dropout);
  return std::string(stack_name(kind)) + " (" + attn_impl_name(attn_impl) + ", dropout " + dropout + ", " +
         (autocast ? "autocast" : "no autocast") + ", " + allocator_name(allocator) + " allocator" +
         (fused_lm_head ? ", fused LM head" : "") + ")";
}

const char* stack_name(StackKind k) { return k == StackKind::lorasim ? "lorasim" : "hf-peft"; }

const char* attn_impl_name(AttnImpl a) {
  switch (a) {
    case AttnImpl::sdpa: return "sdpa";
    case AttnImpl::eager: return "eager";
    case AttnImpl::flash_attention_2: return "flash_attention_2";
  }
  return "?";
}

const char* allocator_name(AllocatorMode a) {
  return a == AllocatorMode::expandable ? "expandable" : "default";
}

StackKind parse_stack(const std::string& text) {
  if (text == "hf-peft" || text == "hf") return StackKind::hf_peft;
  if (text == "lorasim") return StackKind::lorasim;
  throw InputError("unknown stack '" + text + "': allowed are hf-peft (Transformers/TRL + PEFT) and lorasim");
}

AttnImpl parse_attn_impl(const std::string& text) {
  if (text == "sdpa") return AttnImpl::sdpa;
  if (text == "eager") return AttnImpl::eager;
  if (text == "flash_attention_2" || text == "flash-attention-2") return AttnImpl::flash_attention_2;
  throw InputError("unknown attention implementation '" + text + "': allowed are sdpa, eager, flash_attention_2");
}

AllocatorMode parse_allocator(const std::string& text) {
  if (text == "default") return AllocatorMode::default_segments;
  if (text == "expandable" || text == "expandable_segments:True") return AllocatorMode::expandable;
  throw InputError("unknown allocator '" + text +
                   "': allowed are default and expandable (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)");
}

}  // namespace lorasim::model
