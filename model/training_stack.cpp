// The features every stack shares the shape of, and the registry of stack objects.
#include "model/training_stack.h"

#include "model/cost_model.h"
#include "model/error.h"
#include "model/quant_memory.h"
#include "model/stacks/hf_peft_stack.h"
#include "model/stacks/lightning_stack.h"
#include "model/stacks/lorasim_stack.h"

namespace lorasim::model {

Features TrainingStack::features(const Workload& w, int64_t micro_batch) const {
  Features f;
  const Flops fl = flops_per_micro_batch(w, micro_batch);
  f.gemm_flops = fl.gemm + fl.lora;
  f.gemm_flops_per_token = f.gemm_flops / (static_cast<double>(micro_batch) * w.train.seq_len);
  f.head_flops = fl.head;
  f.attention_flops = fl.attention;
  // The stack decides which operators run, what they move and what autograd saves.
  f.memory_bytes = memory_bound_bytes(w, micro_batch);
  f.loss_bytes = loss_bytes(w, micro_batch);
  f.host_ops = host_ops(w);
  f.recompute_ops = recompute_ops(w);
  const ActivationMemory act = activation_memory(w, micro_batch);
  f.saved_bytes = act.saved_bytes;
  f.attention_score_bytes = act.attention_score_bytes;
  f.logits_bytes = act.logits_bytes;
  f.recompute_bytes = act.recompute_bytes;
  f.logits_buffer_bytes = act.logits_buffer_bytes;
  f.family_memory_error = family_memory_error(w.arch);
  f.worst_case_options = runs_worst_case_options(w) ? 1.0 : 0.0;
  f.dequant_weight_bytes = dequantized_weight_bytes(w);
  f.quant_linear_calls = quantized_linear_calls(w);
  f.tokens = static_cast<double>(micro_batch) * static_cast<double>(w.train.seq_len);
  f.fused_head_tokens = w.stack.fused_lm_head ? f.tokens : 0.0;
  const LossTile tile = loss_tile(w);
  f.loss_tile_bytes_per_token = tile.bytes_per_token;
  f.loss_tile_tokens = tile.max_tokens;
  f.static_bytes = static_cast<double>(static_memory(w).total()) + extra_static_bytes(w);
  const ParamCounts pc = count_params(w.arch, w.lora);
  f.lora_tensors = static_cast<double>(pc.lora_tensors);
  f.trainable_params = static_cast<double>(pc.trainable);
  return f;
}

// The stacks, by kind: the built-in ones in the order of their StackKind names, then those
// registered at run time.
class StackRegistry {
 public:
  static std::vector<std::unique_ptr<TrainingStack>>& stacks() {
    static std::vector<std::unique_ptr<TrainingStack>> all = [] {
      std::vector<std::unique_ptr<TrainingStack>> s;
      s.push_back(std::make_unique<HfPeftStack>());   // StackKind::hf_peft
      s.push_back(std::make_unique<LorasimStack>());  // StackKind::lorasim
      s.push_back(std::make_unique<LightningStack>());
      for (size_t i = 0; i < s.size(); ++i) s[i]->kind_ = StackKind{static_cast<int>(i)};
      return s;
    }();
    return all;
  }

  static StackKind add(std::unique_ptr<TrainingStack> stack) {
    std::vector<std::string> names = stack->aliases();
    names.insert(names.begin(), stack->name());
    for (const std::string& n : names)
      if (find_stack(n)) throw InputError("a stack named " + quoted_excerpt(n) + " is registered already: name it otherwise");
    stack->kind_ = StackKind{static_cast<int>(stacks().size())};
    stacks().push_back(std::move(stack));
    refresh_stacks();  // every row gets an entry for it
    return stacks().back()->kind();
  }
};

const TrainingStack& training_stack(StackKind kind) {
  return *StackRegistry::stacks().at(static_cast<size_t>(kind.index));
}

const TrainingStack* find_stack(std::string_view name) {
  for (const auto& s : StackRegistry::stacks()) {
    if (name == s->name()) return s.get();
    for (const std::string& alias : s->aliases())
      if (name == alias) return s.get();
  }
  return nullptr;
}

int stack_count() { return static_cast<int>(StackRegistry::stacks().size()); }

StackKind device_stack() {
  for (const auto& s : StackRegistry::stacks())
    if (s->calibrates_device()) return s->kind();
  throw ConfigError("no registered stack calibrates the device");
}

StackKind register_stack(std::unique_ptr<TrainingStack> stack) { return StackRegistry::add(std::move(stack)); }

}  // namespace lorasim::model
