// The coefficient table. Each row is one profile key; docs/cost-model.md derives the
// equations its features come from.
#include "model/coefficients.h"

#include <algorithm>

namespace lorasim::model {

Features accumulating(const Features& f) {
  Features a = f;
  a.host_ops += a.lora_tensors;  // one in-place add per adapter tensor
  return a;
}

double overlap_share(double host_ops, const TimeCoefficients& c) {
  if (host_ops <= c.launch_queue_ops || host_ops <= 0) return 0;
  return 1 - c.launch_queue_ops / host_ops;
}

bool rebuilt_block_sets_peak(const Features& f, const MemoryCoefficients& m) {
  return f.recompute_bytes > 0 && m.saved_scale * f.recompute_bytes + m.attention_score_scale * f.attention_score_bytes >
                                      m.logits_scale * f.logits_bytes;
}

double Coefficient::theta(const HardwareModel& hw, double rate_scale) const {
  const double v = of(hw);
  switch (form) {
    case Form::linear: return v;
    case Form::rate: return 1.0 / (v * (precision_scaled ? rate_scale : 1.0) * unit);
    case Form::ratio: return v * find_coefficient(base)->theta(hw, rate_scale);
  }
  return 0;
}

double Coefficient::term_value(const Features& f, const HardwareModel& hw, double rate_scale) const {
  switch (form) {
    case Form::linear: return of(hw) * feature(f, hw);
    // Divided, not multiplied by theta, so the figures stay those of the written equations.
    case Form::rate: return feature(f, hw) / (of(hw) * (precision_scaled ? rate_scale : 1.0) * unit);
    case Form::ratio: return 0;
  }
  return 0;
}

namespace {
// Each sum's entries, in table order: every prediction evaluates the sums per split, and
// walking the whole table for each was most of a split's cost.
const std::vector<const Coefficient*>& terms_of(Term term) {
  static const std::vector<std::vector<const Coefficient*>> by_term = [] {
    std::vector<std::vector<const Coefficient*>> v(static_cast<size_t>(Term::limit) + 1);
    for (const Coefficient& c : coefficient_table())
      if (c.form != Form::ratio) v[static_cast<size_t>(c.term)].push_back(&c);
    return v;
  }();
  return by_term[static_cast<size_t>(term)];
}
}  // namespace

double sum_terms(Term term, const Features& f, const HardwareModel& hw, double rate_scale) {
  double s = 0;
  for (const Coefficient* c : terms_of(term)) s += c->term_value(f, hw, rate_scale);
  return s;
}

namespace {

using F = const Features&;
using H = const HardwareModel&;

double one(F, H) { return 1.0; }

// The rebuilt-block and loss-buffer sides of a checkpointed peak (model::peak_memory):
// each scale's regressor is what it multiplies on the side the coefficients pick.
double saved_feature(F f, H hw) {
  return rebuilt_block_sets_peak(f, hw.memory) ? f.saved_bytes + f.recompute_bytes : f.saved_bytes;
}
double score_feature(F f, H hw) {
  return f.recompute_bytes > 0 && !rebuilt_block_sets_peak(f, hw.memory) ? 0.0 : f.attention_score_bytes;
}
double logits_feature(F f, H hw) { return rebuilt_block_sets_peak(f, hw.memory) ? 0.0 : f.logits_bytes; }

double overlap_feature(F f, H hw) {
  const double host = sum_terms(Term::host, f, hw);
  const double device =
      sum_terms(Term::device, f, hw) + sum_terms(Term::device_traffic, f, hw) + sum_terms(Term::device_kernels, f, hw);
  return overlap_share(f.host_ops, hw.time) * std::min(host, device);
}

using T = TimeCoefficients;
using M = MemoryCoefficients;
constexpr double kTera = 1e12, kGiga = 1e9;

Coefficient time(const char* name, double T::*field, Term term, Form form, double unit, bool scaled,
                 double (*feature)(F, H), const char* base, Range range, Fit fit, const char* why) {
  return {name, field, nullptr, term, form, unit, scaled, feature, base, T{}.*field, range, fit, why};
}
Coefficient memory(const char* name, double M::*field, Term term, double (*feature)(F, H), Range range, Fit fit,
                   const char* why) {
  return {name, nullptr, field, term, Form::linear, 1.0, false, feature, nullptr, M{}.*field, range, fit, why};
}

std::vector<Coefficient> make_table() {
  const auto L = Form::linear, R = Form::rate;
  const auto nn = Range::non_negative, pos = Range::positive;
  return {
      time("host_fixed_s", &T::host_fixed_s, Term::host, L, 1, false, one, nullptr, nn, Fit::linear,
           "host time per micro-batch whatever its size (Python/C++ loop, autograd setup)"),
      time("host_per_op_s", &T::host_per_op_s, Term::host, L, 1, false,
           [](F f, H hw) { return f.host_ops - (1 - hw.time.recompute_host_share) * f.recompute_ops; }, nullptr, nn,
           Fit::linear, "host dispatch per operator; recomputing operators count at recompute_host_share"),
      time("recompute_host_share", &T::recompute_host_share, Term::shape, L, 1, false,
           [](F f, H hw) { return hw.time.host_per_op_s * f.recompute_ops; }, nullptr, nn, Fit::own,
           "host cost of checkpointing's extra forward per operator, relative to an ordinary one "
           "(no autograd recording); fitted from host-bound checkpointed rows with the host line known"),
      time("device_fixed_s", &T::device_fixed_s, Term::device, L, 1, false, one, nullptr, nn, Fit::linear,
           "device time per micro-batch whatever its size"),
      time("gemm_tflops", &T::gemm_tflops, Term::device, R, kTera, true,
           [](F f, H hw) { return f.gemm_flops + f.gemm_flops_per_token * hw.time.gemm_half_tokens; }, nullptr, pos,
           Fit::linear, "asymptotic rate of the blocks' GEMMs; its feature includes Hockney's fixed cost per GEMM"),
      time("gemm_half_tokens", &T::gemm_half_tokens, Term::device, Form::ratio, 1, false,
           [](F f, H) { return f.gemm_flops_per_token; }, "gemm_tflops", nn, Fit::linear,
           "tokens at which the GEMMs reach half their rate (Hockney n_1/2): a fixed cost per GEMM"),
      time("head_tflops", &T::head_tflops, Term::device, R, kTera, true, [](F f, H) { return f.head_flops; },
           nullptr, pos, Fit::linear, "LM-head rate: one large GEMM, faster than the blocks' small ones"),
      time("attention_tflops", &T::attention_tflops, Term::device, R, kTera, true,
           [](F f, H) { return f.attention_flops; }, nullptr, pos, Fit::linear, "attention kernels' rate"),
      time("memory_gbps", &T::memory_gbps, Term::device_traffic, R, kGiga, false,
           [](F f, H) { return f.memory_bytes; }, nullptr, pos, Fit::linear,
           "bandwidth of the blocks' memory-bound operators (norms, RoPE, SwiGLU, adds, adapters)"),
      time("loss_gbps", &T::loss_gbps, Term::device_traffic, R, kGiga, false, [](F f, H) { return f.loss_bytes; },
           nullptr, pos, Fit::linear, "bandwidth of the softmax and loss over the vocabulary"),
      time("per_kernel_s", &T::per_kernel_s, Term::device_kernels, L, 1, false, [](F f, H) { return f.host_ops; },
           nullptr, nn, Fit::linear, "device time floor per operator (launch latency, tiny kernels)"),
      time("overlap_loss", &T::overlap_loss, Term::shape, L, 1, false, overlap_feature, nullptr, Range::share,
           Fit::own,
           "share of min(host, device) that fails to overlap beyond the launch queue; fitted from the "
           "steady-state micro-batch times once host and device are known"),
      time("launch_queue_ops", &T::launch_queue_ops, Term::shape, L, 1, false, nullptr, nullptr, pos, Fit::never,
           "operators the host runs ahead of the device (CUDA's launch queue): a prior, never fitted; a "
           "threshold of overlap_loss's feature, not a multiplier"),
      time("optimizer_fixed_s", &T::optimizer_fixed_s, Term::optimizer_host, L, 1, false, one, nullptr, nn,
           Fit::linear, "AdamW step + zero_grad: host time, fixed part"),
      time("optimizer_per_tensor_s", &T::optimizer_per_tensor_s, Term::optimizer_host, L, 1, false,
           [](F f, H) { return f.lora_tensors; }, nullptr, nn, Fit::linear,
           "host dispatch per adapter tensor (the optimizer updates one tensor at a time)"),
      time("optimizer_device_per_tensor_s", &T::optimizer_device_per_tensor_s, Term::optimizer_device, L, 1, false,
           [](F f, H) { return f.lora_tensors; }, nullptr, nn, Fit::linear, "device time per adapter tensor"),
      time("optimizer_per_param_s", &T::optimizer_per_param_s, Term::optimizer_device, L, 1, false,
           [](F f, H) { return f.trainable_params; }, nullptr, nn, Fit::linear,
           "device time per trainable parameter (the update's bandwidth)"),
      memory("saved_scale", &M::saved_scale, Term::allocated, saved_feature, nn, Fit::linear,
             "x the analytic activations saved for backward (and a rebuilt block's, when it sets the peak)"),
      memory("attention_score_scale", &M::attention_score_scale, Term::allocated, score_feature, nn, Fit::linear,
             "x the b*H*s*s attention scores (0 with fused attention)"),
      memory("logits_scale", &M::logits_scale, Term::allocated, logits_feature, nn, Fit::linear,
             "x the analytic logits and loss buffers"),
      memory("workspace_bytes", &M::workspace_bytes, Term::allocated, one, nn, Fit::linear,
             "allocator-visible constant (library workspaces, tables)"),
      memory("reserved_scale", &M::reserved_scale, Term::reserved, [](F f, H) { return f.allocated_bytes; }, nn,
             Fit::linear, "the caching allocator's reserved memory per allocated byte"),
      memory("reserved_overhead_bytes", &M::reserved_overhead_bytes, Term::reserved, one, nn, Fit::linear,
             "the caching allocator's constant overhead"),
      memory("context_bytes", &M::context_bytes, Term::limit, one, nn, Fit::never,
             "device memory outside the allocator (CUDA context, kernel images): a prior, never fitted "
             "(no measured peak includes it)"),
  };
}

}  // namespace

const std::vector<Coefficient>& coefficient_table() {
  static const std::vector<Coefficient> table = make_table();
  return table;
}

const Coefficient* find_coefficient(std::string_view name) {
  for (const Coefficient& c : coefficient_table())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace lorasim::model
