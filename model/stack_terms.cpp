// The [stack.hf-peft] table and how its terms replace a device's.
#include "model/stack_terms.h"

#include <algorithm>

#include "model/hardware.h"

namespace lorasim::model {

const std::vector<StackTerm>& stack_term_table() {
  static const std::vector<StackTerm> table = {
      {"host_fixed_s", &StackTerms::host_fixed_s, false, "host time per micro-batch, independent of size"},
      {"host_per_op_s", &StackTerms::host_per_op_s, false, "host time per dispatched operator (Python module calls)"},
      {"recompute_host_share", &StackTerms::recompute_host_share, false,
       "host cost of checkpointing's recomputed forward operators relative to ordinary ones"},
      {"device_scale", &StackTerms::device_scale, true, "device time of the stack's graph relative to the counted work"},
      {"head_device_scale", &StackTerms::head_device_scale, true,
       "device time of the LM head and the loss relative to the counted work"},
      {"optimizer_fixed_s", &StackTerms::optimizer_fixed_s, false, "optimizer step host time, fixed part"},
      {"optimizer_per_tensor_s", &StackTerms::optimizer_per_tensor_s, false, "optimizer host time per adapter tensor"},
      {"saved_scale", &StackTerms::saved_scale, false, "x the counted saved activations"},
      {"logits_scale", &StackTerms::logits_scale, false, "x the counted loss buffers"},
      {"workspace_bytes", &StackTerms::workspace_bytes, false, "allocator-visible constant"},
      {"reserved_scale", &StackTerms::reserved_scale, true, "reserved per allocated byte (1: the slack terms carry it)"},
      {"reserved_overhead_bytes", &StackTerms::reserved_overhead_bytes, false, "reserved beyond allocated, constant"},
      {"reserved_activation_share", &StackTerms::reserved_activation_share, false,
       "allocator slack per byte of activations (allocated beyond the static memory)"},
      {"reserved_logits_share", &StackTerms::reserved_logits_share, false,
       "allocator slack in half-precision logits tensors (the loss's large transient blocks)"},
      {"expected_time_error", &StackTerms::expected_time_error, false, "typical relative step-time error"},
      {"expected_memory_error", &StackTerms::expected_memory_error, false, "typical relative peak-memory error"},
      {"host_spread", &StackTerms::host_spread, false,
       "relative deviation of the host's time between processes and machines (a prior, not fitted)", true},
      {"device_spread", &StackTerms::device_spread, false,
       "relative deviation of the device's time from the prediction (a prior, not fitted)", true},
  };
  return table;
}

const StackTerm* find_stack_term(std::string_view name) {
  for (const StackTerm& t : stack_term_table())
    if (name == t.name) return &t;
  return nullptr;
}

HardwareModel for_stack(const HardwareModel& hw, const StackSpec& stack) {
  if (hw.stack_applied) return hw;
  HardwareModel m = hw;
  if (stack.kind != StackKind::hf_peft) {
    // The runner's profile has no spreads of its own: its expected error stands for both.
    m.host_spread = m.device_spread = hw.expected_time_error;
    return m;
  }
  const StackTerms& t = hw.hf_peft;
  m.stack_applied = true;
  m.time.host_fixed_s = t.host_fixed_s;
  m.time.host_per_op_s = t.host_per_op_s;
  m.time.recompute_host_share = t.recompute_host_share;
  m.time.optimizer_fixed_s = t.optimizer_fixed_s;
  m.time.optimizer_per_tensor_s = t.optimizer_per_tensor_s;
  m.device_scale = t.device_scale;
  m.head_device_scale = t.head_device_scale;
  m.memory.saved_scale = t.saved_scale;
  m.memory.logits_scale = t.logits_scale;
  m.memory.attention_score_scale = 1.0;  // the stack's counts include eager attention's scores
  m.memory.workspace_bytes = t.workspace_bytes;
  m.memory.reserved_scale = t.reserved_scale;
  m.memory.reserved_overhead_bytes = t.reserved_overhead_bytes;
  m.reserved_activation_share = t.reserved_activation_share;
  m.reserved_logits_share = t.reserved_logits_share;
  m.worst_case_margin = t.expected_memory_error;
  m.expected_time_error = std::max(hw.expected_time_error, t.expected_time_error);
  m.expected_memory_error = std::max(hw.expected_memory_error, t.expected_memory_error);
  m.host_spread = t.host_spread;
  m.device_spread = t.device_spread;
  m.calibrated = hw.calibrated && t.calibrated;
  return m;
}

}  // namespace lorasim::model
