// Stack names, parsing and validation; what differs by stack is the stack object's
// (model/training_stack.h).
#include "model/stack.h"

#include <cmath>

#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::model {

StackSpec StackSpec::lorasim_runner() { return training_stack(StackKind::lorasim).default_spec(); }

void StackSpec::validate() const {
  if (!(lora_dropout >= 0.0 && lora_dropout < 1.0))
    throw InputError("LoRA dropout must be in [0, 1), got " + std::to_string(lora_dropout));
  training_stack(kind).validate(*this);
}

std::string StackSpec::describe() const { return training_stack(kind).describe(*this); }

const char* stack_name(StackKind k) { return training_stack(k).name(); }

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
  if (const TrainingStack* s = find_stack(text)) return s->kind();
  std::string allowed;  // "hf-peft (Transformers/TRL + PEFT) and lorasim"
  for (int i = 0; i < stack_count(); ++i) {
    const TrainingStack& s = training_stack(StackKind{i});
    allowed += std::string(i == 0 ? "" : i + 1 == stack_count() ? " and " : ", ") + s.name() +
               (s.summary().empty() ? "" : " (" + s.summary() + ")");
  }
  throw InputError("unknown stack " + quoted_excerpt(text) + ": allowed are " + allowed);
}

AttnImpl parse_attn_impl(const std::string& text) {
  if (text == "sdpa") return AttnImpl::sdpa;
  if (text == "eager") return AttnImpl::eager;
  if (text == "flash_attention_2" || text == "flash-attention-2") return AttnImpl::flash_attention_2;
  throw InputError("unknown attention implementation " + quoted_excerpt(text) + ": allowed are sdpa, eager, flash_attention_2");
}

AllocatorMode parse_allocator(const std::string& text) {
  if (text == "default") return AllocatorMode::default_segments;
  if (text == "expandable" || text == "expandable_segments:True") return AllocatorMode::expandable;
  throw InputError("unknown allocator '" + text +
                   "': allowed are default and expandable (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)");
}

}  // namespace lorasim::model
