// Cost-model equations, each written once. docs/cost-model.md derives them and names each
// coefficient.
#include "model/cost_model.h"

#include <algorithm>

#include "model/training_stack.h"

namespace lorasim::model {

namespace {

/// The features that scale with the micro-batch (every one but a loss tile's bytes).
Features linear_features(const Workload& w, int64_t micro_batch) {
  require_modelled(w);  // model/workload.h: inputs the equations do not count yet
  return training_stack(w.stack.kind).features(w, micro_batch);
}

/// A loss tile is one buffer whatever the micro-batch, up to its size: part of the loss's
/// transients at its peak, and one of its large blocks for the reserved slack and worst case.
Features with_loss_tile(Features f) {
  const double tile = std::min(f.tokens, f.loss_tile_tokens) * f.loss_tile_bytes_per_token;
  f.logits_bytes += tile;
  f.logits_buffer_bytes += tile;
  return f;
}

}  // namespace

Features features(const Workload& w, int64_t micro_batch) {
  return with_loss_tile(linear_features(w, micro_batch));
}

namespace {
double scale_between(Precision from_p, Precision to_p, double from, double to) {
  // Rates were fitted in one precision; another precision scales them by the datasheet
  // ratio (an extrapolation: the output says so when it happens).
  if (to_p == from_p) return 1.0;
  return from > 0 && to > 0 ? to / from : 1.0;
}
}  // namespace

double StackModel::rate_scale(Precision p) const {
  auto peak = [&](Precision q) {
    return q == Precision::bf16 ? peak_bf16_tflops : q == Precision::fp16 ? peak_fp16_tflops : peak_fp32_tflops;
  };
  return scale_between(coefficients_precision, p, peak(coefficients_precision), peak(p));
}

double rate_scale(const HardwareModel& hw, Precision p) {
  return scale_between(hw.coefficients_precision, p, hw.peak_tflops(hw.coefficients_precision), hw.peak_tflops(p));
}

StackModel stack_model(const HardwareModel& hw, StackKind stack) {
  StackModel m;
  m.stack = stack;
  m.c = resolve(hw, stack);
  m.overlap = hw.overlap;
  m.coefficients_precision = hw.coefficients_precision;
  m.peak_bf16_tflops = hw.peak_bf16_tflops;
  m.peak_fp16_tflops = hw.peak_fp16_tflops;
  m.peak_fp32_tflops = hw.peak_fp32_tflops;
  m.prior = prior_errors(hw, stack);
  return m;
}

double overlap_coupling(double host_ops, const Coefficients& c) {
  return c.overlap_loss * overlap_share(host_ops, c);
}

double combine(double host_s, double device_s, double coupling, Overlap overlap) {
  if (overlap == Overlap::sum) return host_s + device_s;
  // Asynchronous launch hides the shorter side, but only as far as the host can run ahead:
  // once a micro-batch has more operators than the launch queue holds, host and device
  // are coupled over windows of the queue's length and their imbalances add up.
  return std::max(host_s, device_s) + coupling * std::min(host_s, device_s);
}

double head_device_s(const Features& f, const Coefficients& c, double rate_scale) {
  static const Coefficient* head = find_coefficient("head_tflops");
  static const Coefficient* loss = find_coefficient("loss_gbps");
  return head->term_value(f, c, rate_scale) + loss->term_value(f, c, rate_scale);
}

MicroBatchTime micro_batch_time(const Features& f, const StackModel& m, Precision p) {
  const Coefficients& c = m.c;
  const double rate_scale = m.rate_scale(p);
  MicroBatchTime t;
  t.host_s = sum_terms(Term::host, f, c);
  t.device_s = sum_terms(Term::device, f, c, rate_scale) + sum_terms(Term::device_traffic, f, c) +
               sum_terms(Term::device_kernels, f, c);
  if (c.device_scale != 1.0 || c.head_device_scale != 1.0) {
    // A stack's graph: its blocks and its head + loss scale apart.
    const double head = head_device_s(f, c, rate_scale);
    t.device_s = c.device_scale * (t.device_s - head) + c.head_device_scale * head;
  }
  t.total_s = combine(t.host_s, t.device_s, overlap_coupling(f.host_ops, c), m.overlap);
  return t;
}

MemoryEstimate peak_memory(const Features& f, const StackModel& m) {
  const Coefficients& c = m.c;
  MemoryEstimate e;
  // The loss's buffers and a checkpointed block's rebuilt activations (with its scores) are
  // alive at different times of the backward pass; without checkpointing the scores of
  // every block are saved alongside the loss's buffers.
  const double scores = c.attention_score_scale * f.attention_score_bytes;
  const double transient = f.recompute_bytes <= 0             ? c.logits_scale * f.logits_bytes + scores
                           : rebuilt_block_sets_peak(f, c) ? c.saved_scale * f.recompute_bytes + scores
                                                           : c.logits_scale * f.logits_bytes;
  e.peak_allocated_bytes = f.static_bytes + c.workspace_bytes + c.saved_scale * f.saved_bytes + transient;
  Features at_peak = f;
  at_peak.allocated_bytes = e.peak_allocated_bytes;
  double reserved = sum_terms(Term::reserved, at_peak, c);
  reserved += sum_terms(Term::reserved_slack, at_peak, c);  // a stack's slack; 0 for the runner
  e.peak_reserved_bytes = std::max(e.peak_allocated_bytes, reserved);
  // The worst case is what a measured peak was seen to exceed its count by, term by term: the
  // static weights and optimizer state are counted exactly; the rest (activations, transients,
  // the allocator's slack) may be off by the stack's measured share; a prior adds the device's
  // unknown bytes whole. No extra logits tensor: a cached block the allocator cannot reuse is
  // released and the allocation retried before an out-of-memory is reported, so at the memory
  // limit it costs nothing (docs/cost-model.md, "Worst case").
  const double margin = std::max(
      {c.worst_case_margin + c.worst_case_margin_options * f.worst_case_options, m.prior.memory, f.family_memory_error});
  e.variable_bytes = std::max(0.0, e.peak_reserved_bytes - f.static_bytes);
  e.worst_reserved_bytes =
      e.peak_reserved_bytes + margin * e.variable_bytes + c.worst_case_bytes + m.prior.memory_bytes;
  return e;
}

bool runs_worst_case_options(const Workload& w) {
  // A stack that reads its memory rows from another's (lightning: hf-peft's, fitted on a Trainer's
  // step) holds what its own loop keeps besides: Lightning's small micro-batches held up to 7% more
  // than a Trainer's (bench/results/h100/README.md, boundary-loop-run1 and lightning-run4).
  return w.train.grad_ckpt || w.stack.lora_dropout > 0 || !w.stack.autocast || w.train.quantized() ||
         training_stack(w.stack.kind).base_stack() != nullptr;
}

double worst_case_share(const Coefficients& c, const Workload& w) {
  return c.worst_case_margin + (runs_worst_case_options(w) ? c.worst_case_margin_options : 0.0);
}

OptimizerTime optimizer_time(const Features& f, const StackModel& m) {
  return {sum_terms(Term::optimizer_host, f, m.c), sum_terms(Term::optimizer_device, f, m.c)};
}

CostModel::CostModel(const Workload& w, const HardwareModel& hw) : CostModel(w, stack_model(hw, w.stack.kind)) {}

CostModel::CostModel(const Workload& w, const StackModel& m)
    : m_(m), precision_(w.train.precision), unit_(linear_features(w, 1)), optimizer_(optimizer_time(unit_, m_)) {}

Features CostModel::at(int64_t micro_batch) const {
  // The FLOPs, bytes and activations are linear in the micro-batch at a fixed sequence
  // length and the other features do not depend on it (model/coefficients.h marks which), so one
  // evaluation at b = 1 serves all splits.
  const double b = static_cast<double>(micro_batch);
  Features f = unit_;
  for (double Features::*linear : kPerMicroBatch) f.*linear *= b;
  return with_loss_tile(f);
}

MicroBatchTime CostModel::micro_batch(int64_t micro_batch, bool accumulating) const {
  const Features f = at(micro_batch);
  return micro_batch_time(accumulating ? model::accumulating(f) : f, m_, precision_);
}

StepTime CostModel::step(int64_t micro_batch, int64_t accumulation) const {
  const MicroBatchTime first = this->micro_batch(micro_batch);
  const double rest = static_cast<double>(accumulation - 1);
  double host_s = first.host_s + optimizer_.host_s;
  double device_s = first.device_s + optimizer_.device_s;
  if (rest > 0) {
    const MicroBatchTime acc = this->micro_batch(micro_batch, true);
    host_s += rest * acc.host_s;
    device_s += rest * acc.device_s;
  }
  return step_of(host_s, device_s);
}

StepTime CostModel::step_of(double host_s, double device_s) const {
  StepTime s;
  s.host_s = host_s;
  s.device_s = device_s;
  const double coupling = overlap_coupling(unit_.host_ops, m_.c);
  s.total_s = combine(host_s, device_s, coupling, m_.overlap);
  // The CPU's speed and the device's error deviate apart: each bound moves both, then combines.
  const double h = std::max(m_.c.host_spread, m_.prior.time), d = std::max(m_.c.device_spread, m_.prior.time);
  s.low_s = combine(host_s * (1 - h), device_s * (1 - d), coupling, m_.overlap);
  s.high_s = combine(host_s * (1 + h), device_s * (1 + d), coupling, m_.overlap);
  s.host_bound = host_s > device_s;
  return s;
}

MemoryEstimate CostModel::memory(int64_t micro_batch) const { return peak_memory(at(micro_batch), m_); }

}  // namespace lorasim::model
