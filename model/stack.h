// The training stack: the program that runs the training steps, as opposed to the GPU it runs
// on. Two programs with the same model and split dispatch different operators, save different
// tensors for backward and hold different allocator slack (docs/stacks.md), so the stack is
// part of the workload, and a profile carries terms per stack next to the GPU's.
#pragma once
#include <string>

namespace lorasim::model {

/// A training stack: its place in the registry of stack objects (model/training_stack.h:
/// training_stack(kind), find_stack(name), register_stack). The two built in are named here; a
/// stack registered later gets its kind from register_stack, with no edit here.
struct StackKind {
  int index = 0;
  static const StackKind hf_peft;  ///< Hugging Face Transformers (Trainer, TRL's SFTTrainer or a plain loop) + PEFT
  static const StackKind lorasim;  ///< lorasim's own LibTorch runner (calibrate/)
  friend constexpr bool operator==(StackKind a, StackKind b) { return a.index == b.index; }
  friend constexpr bool operator!=(StackKind a, StackKind b) { return a.index != b.index; }
};
inline constexpr StackKind StackKind::hf_peft{0};
inline constexpr StackKind StackKind::lorasim{1};

/// Attention implementation, as transformers' `attn_implementation` names it.
enum class AttnImpl { sdpa, eager, flash_attention_2 };

/// The CUDA caching allocator's mode (PYTORCH_CUDA_ALLOC_CONF).
enum class AllocatorMode {
  default_segments,  ///< PyTorch's default: fixed segments, fragmentation shows in reserved
  expandable,        ///< expandable_segments:True: segments grow in place
};

struct StackSpec {
  StackKind kind = StackKind::hf_peft;
  AttnImpl attn_impl = AttnImpl::sdpa;
  double lora_dropout = 0.0;        ///< PEFT LoraConfig.lora_dropout; > 0 keeps a dropped input copy
  AllocatorMode allocator = AllocatorMode::default_segments;
  bool autocast = true;             ///< the forward runs under torch.autocast (Trainer with bf16/fp16)
  /// The loss through TRL's fused LM head (SFTTrainer's default in TRL 1.x): per-token log-probs
  /// computed in tiles, never the (batch, seq, vocab) logits; false: Transformers' loss over
  /// the full fp32 logits (Trainer, a plain loop).
  bool fused_lm_head = false;

  /// What lorasim's LibTorch runner is: it has no dropout, no autocast, SDPA where LibTorch has
  /// it, and it runs with expandable segments.
  static StackSpec lorasim_runner();
  /// Throws InputError for a dropout outside [0, 1) or an option the stack does not have.
  void validate() const;
  /// "hf-peft (sdpa, dropout 0.05, autocast, default allocator)"
  std::string describe() const;
};

const char* stack_name(StackKind k);          ///< "hf-peft", "lorasim": training_stack(k).name()
const char* attn_impl_name(AttnImpl a);       ///< "sdpa", "eager", "flash_attention_2"
const char* allocator_name(AllocatorMode a);  ///< "default", "expandable"
/// Parsers throw InputError naming the value and the allowed ones. A stack by its name or an
/// alias of it (training_stack.h's registry).
StackKind parse_stack(const std::string& text);
AttnImpl parse_attn_impl(const std::string& text);
AllocatorMode parse_allocator(const std::string& text);

}  // namespace lorasim::model
