// Cost-model equations. docs/cost-model.md derives them and names each coefficient.
#include "model/cost_model.h"

#include <algorithm>

#include "model/analytics.h"
#include "model/hf_analytics.h"

namespace lorasim::model {

Features features(const Workload& w, int64_t micro_batch) {
  require_modelled(w);  // model/workload.h: inputs the equations below do not count yet
  Features f;
  const Flops fl = flops_per_micro_batch(w, micro_batch);
  f.gemm_flops = fl.gemm + fl.lora;
  f.gemm_flops_per_token = f.gemm_flops / (static_cast<double>(micro_batch) * w.train.seq_len);
  f.head_flops = fl.head;
  f.attention_flops = fl.attention;
  // The stack decides which operators run, what they move and what autograd saves.
  const bool hf = w.stack.kind == StackKind::hf_peft;
  f.memory_bytes = hf ? hf_memory_bound_bytes(w, micro_batch) : memory_bound_bytes(w, micro_batch);
  f.loss_bytes = hf ? hf_loss_bytes(w, micro_batch) : loss_bytes(w, micro_batch);
  f.host_ops = hf ? hf_host_ops_per_micro_batch(w) : host_ops_per_micro_batch(w);
  f.recompute_ops = hf ? hf_recompute_ops_per_micro_batch(w) : recompute_ops_per_micro_batch(w);
  const ActivationMemory act = hf ? hf_activation_memory(w, micro_batch) : activation_memory(w, micro_batch);
  f.saved_bytes = act.saved_bytes;
  f.attention_score_bytes = act.attention_score_bytes;
  f.logits_bytes = act.logits_bytes;
  f.recompute_bytes = act.recompute_bytes;
  f.logits_buffer_bytes = act.logits_buffer_bytes;
  f.static_bytes = static_cast<double>(static_memory(w).total()) + (hf ? hf_extra_static_bytes(w) : 0.0);
  const ParamCounts pc = count_params(w.arch, w.lora);
  f.lora_tensors = static_cast<double>(pc.lora_tensors);
  f.trainable_params = static_cast<double>(pc.trainable);
  return f;
}

namespace {

double combine(double host_s, double device_s, double host_ops, const HardwareModel& hw) {
  if (hw.overlap == Overlap::sum) return host_s + device_s;
  // Asynchronous launch hides the shorter side, but only as far as the host can run ahead:
  // once a micro-batch has more operators than the launch queue holds, host and device
  // are coupled over windows of the queue's length and their imbalances add up.
  return std::max(host_s, device_s) +
         hw.time.overlap_loss * overlap_share(host_ops, hw.time) * std::min(host_s, device_s);
}

}  // namespace

double rate_scale(const HardwareModel& hw, Precision p) {
  // Rates were fitted in one precision; another precision scales them by the datasheet
  // ratio (an extrapolation: the output says so when it happens).
  if (p == hw.coefficients_precision) return 1.0;
  const double from = hw.peak_tflops(hw.coefficients_precision), to = hw.peak_tflops(p);
  return from > 0 && to > 0 ? to / from : 1.0;
}

double head_device_s(const Features& f, const HardwareModel& hw, double rate_scale) {
  static const Coefficient* head = find_coefficient("head_tflops");
  static const Coefficient* loss = find_coefficient("loss_gbps");
  return head->term_value(f, hw, rate_scale) + loss->term_value(f, hw, rate_scale);
}

MicroBatchTime micro_batch_time(const Features& f, const HardwareModel& hw, Precision p) {
  const double rate_scale = model::rate_scale(hw, p);
  MicroBatchTime t;
  t.host_s = sum_terms(Term::host, f, hw);
  t.device_s = sum_terms(Term::device, f, hw, rate_scale) + sum_terms(Term::device_traffic, f, hw) +
               sum_terms(Term::device_kernels, f, hw);
  if (hw.device_scale != 1.0 || hw.head_device_scale != 1.0) {
    // A stack's graph (model/stack_terms.h): its blocks and its head + loss scale apart.
    const double head = head_device_s(f, hw, rate_scale);
    t.device_s = hw.device_scale * (t.device_s - head) + hw.head_device_scale * head;
  }
  t.total_s = combine(t.host_s, t.device_s, f.host_ops, hw);
  return t;
}

MemoryEstimate peak_memory(const Features& f, const HardwareModel& hw) {
  const MemoryCoefficients& m = hw.memory;
  MemoryEstimate e;
  // The loss's buffers and a checkpointed block's rebuilt activations (with its scores) are
  // alive at different times of the backward pass; without checkpointing the scores of
  // every block are saved alongside the loss's buffers.
  const double scores = m.attention_score_scale * f.attention_score_bytes;
  const double transient = f.recompute_bytes <= 0             ? m.logits_scale * f.logits_bytes + scores
                           : rebuilt_block_sets_peak(f, m) ? m.saved_scale * f.recompute_bytes + scores
                                                           : m.logits_scale * f.logits_bytes;
  e.peak_allocated_bytes = f.static_bytes + m.workspace_bytes + m.saved_scale * f.saved_bytes + transient;
  Features at_peak = f;
  at_peak.allocated_bytes = e.peak_allocated_bytes;
  double reserved = sum_terms(Term::reserved, at_peak, hw);
  // A stack's allocator slack (model/stack_terms.h); 0 for the device's own terms.
  reserved += hw.reserved_logits_share * f.logits_buffer_bytes +
              hw.reserved_activation_share * (e.peak_allocated_bytes - f.static_bytes);
  e.peak_reserved_bytes = std::max(e.peak_allocated_bytes, reserved);
  e.worst_reserved_bytes = e.peak_reserved_bytes * (1 + hw.worst_case_margin) + f.logits_buffer_bytes;
  return e;
}

OptimizerTime optimizer_time(const Features& f, const HardwareModel& hw) {
  return {sum_terms(Term::optimizer_host, f, hw), sum_terms(Term::optimizer_device, f, hw)};
}

CostModel::CostModel(const Workload& w, const HardwareModel& hw)
    : hw_(for_stack(hw, w.stack)),
      precision_(w.train.precision),
      unit_(features(w, 1)),
      optimizer_(optimizer_time(unit_, hw_)) {}

Features CostModel::at(int64_t micro_batch) const {
  // The FLOPs, bytes and activations are linear in the micro-batch at a fixed sequence
  // length and the other features do not depend on it (model/coefficients.h), so one
  // evaluation at b = 1 serves all splits.
  const double b = static_cast<double>(micro_batch);
  Features f = unit_;
  f.gemm_flops *= b;
  f.head_flops *= b;
  f.attention_flops *= b;
  f.memory_bytes *= b;
  f.loss_bytes *= b;
  f.saved_bytes *= b;
  f.attention_score_bytes *= b;
  f.logits_bytes *= b;
  f.recompute_bytes *= b;
  f.logits_buffer_bytes *= b;
  return f;
}

MicroBatchTime CostModel::micro_batch(int64_t micro_batch, bool accumulating) const {
  const Features f = at(micro_batch);
  return micro_batch_time(accumulating ? model::accumulating(f) : f, hw_, precision_);
}

StepTime CostModel::step(int64_t micro_batch, int64_t accumulation) const {
  const MicroBatchTime first = this->micro_batch(micro_batch);
  const double rest = static_cast<double>(accumulation - 1);
  StepTime s;
  s.host_s = first.host_s + optimizer_.host_s;
  s.device_s = first.device_s + optimizer_.device_s;
  if (rest > 0) {
    const MicroBatchTime acc = this->micro_batch(micro_batch, true);
    s.host_s += rest * acc.host_s;
    s.device_s += rest * acc.device_s;
  }
  s.total_s = combine(s.host_s, s.device_s, unit_.host_ops, hw_);
  // The CPU's speed and the device's error deviate apart: each bound moves both, then combines.
  const double h = hw_.host_spread, d = hw_.device_spread;
  s.low_s = combine(s.host_s * (1 - h), s.device_s * (1 - d), unit_.host_ops, hw_);
  s.high_s = combine(s.host_s * (1 + h), s.device_s * (1 + d), unit_.host_ops, hw_);
  s.host_bound = s.host_s > s.device_s;
  return s;
}

MemoryEstimate CostModel::memory(int64_t micro_batch) const { return peak_memory(at(micro_batch), hw_); }

StepTime CostModel::step_of(double host_s, double device_s) const {
  StepTime s;
  s.host_s = host_s;
  s.device_s = device_s;
  s.total_s = combine(host_s, device_s, unit_.host_ops, hw_);
  const double h = hw_.host_spread, d = hw_.device_spread;
  s.low_s = combine(host_s * (1 - h), device_s * (1 - d), unit_.host_ops, hw_);
  s.high_s = combine(host_s * (1 + h), device_s * (1 + d), unit_.host_ops, hw_);
  s.host_bound = host_s > device_s;
  return s;
}

}  // namespace lorasim::model
