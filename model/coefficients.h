// The coefficient table: every time and memory coefficient of a hardware profile, with the
// regressor (feature) it multiplies, its prior, its allowed range, and how calibration fits it.
// model/cost_model.cpp evaluates the time equations through it, calibrate/fit*.cpp builds
// its design matrices from it and hwprofiles/ reads, checks and writes the [time] and
// [memory] keys from it: "where is X fitted, where is it used" is one lookup here.
#pragma once
#include <string_view>
#include <vector>

#include "model/hardware.h"

namespace lorasim::model {

/// Regressors of one micro-batch: the analytic quantities the coefficients multiply.
/// At a fixed sequence length the FLOPs, bytes and activations grow linearly with the
/// micro-batch; the operator counts, gemm_flops_per_token and the per-workload constants
/// (static memory, adapter tensors and parameters) do not depend on it.
struct Features {
  double gemm_flops = 0;             ///< the blocks' frozen GEMM + LoRA FLOPs
  double gemm_flops_per_token = 0;   ///< the same per token (drives the Hockney term)
  double head_flops = 0;             ///< LM-head FLOPs
  double attention_flops = 0;
  double memory_bytes = 0;           ///< the blocks' memory-bound traffic
  double loss_bytes = 0;             ///< the loss's traffic over the vocabulary
  double host_ops = 0;               ///< dispatched operators
  double recompute_ops = 0;          ///< of those, the forward that checkpointing adds
  double saved_bytes = 0;            ///< activations saved for backward
  double attention_score_bytes = 0;  ///< unfused attention scores
  double logits_bytes = 0;           ///< logits and loss buffers
  double recompute_bytes = 0;        ///< one checkpointed block rebuilt in backward
  double logits_buffer_bytes = 0;    ///< one logits tensor (the allocator's worst slack)
  double static_bytes = 0;           ///< weights + adapters + gradients + optimizer state
  double lora_tensors = 0;           ///< adapter tensors (the optimizer's per-tensor work)
  double trainable_params = 0;       ///< adapter parameters (the optimizer's per-parameter work)
  /// The allocated peak that the reserved model scales: the measured one in the fit,
  /// peak_memory's own prediction otherwise (features() leaves it 0).
  double allocated_bytes = 0;
};

/// The same micro-batch when it is not the first of its step: it also dispatches one
/// gradient-accumulation add per adapter tensor.
Features accumulating(const Features& f);

/// The share of overlap_loss that applies to a micro-batch of `host_ops` operators: 0 while
/// the whole micro-batch fits in the launch queue, approaching 1 for very long ones.
double overlap_share(double host_ops, const TimeCoefficients& c);

/// With gradient checkpointing, whether the rebuilt block (with its scores), not the loss's
/// buffers, sets the allocated peak; false without checkpointing.
bool rebuilt_block_sets_peak(const Features& f, const MemoryCoefficients& m);

/// What a profile number may hold. Every number must also be finite.
enum class Range {
  positive,        ///< rates and counts the equations divide by: 0 would divide by zero
  non_negative,    ///< times, scales, byte counts, datasheet peaks (0 = unknown / unsupported)
  share,           ///< [0, 1]: a part of a whole
  relative_error,  ///< [0, 10]: an expected relative error (above 1000% is a typo)
};

/// The sum of the equations a coefficient's term belongs to (docs/cost-model.md). Terms of one
/// sum are added in table order.
enum class Term {
  host,              ///< H: host dispatch of a micro-batch
  device,            ///< D, its fixed and FLOP-bound part
  device_traffic,    ///< D, its memory-bound part
  device_kernels,    ///< D, its per-operator floor
  optimizer_host,    ///< H_opt: dispatch of AdamW + zero_grad
  optimizer_device,  ///< D_opt: AdamW's kernels
  allocated,         ///< allocated peak beyond the static memory (piecewise: peak_memory)
  reserved,          ///< reserved = reserved_scale * allocated + reserved_overhead_bytes
  shape,             ///< in no sum: shapes another term or how host and device combine
  limit,             ///< outside the peak: device memory the limit loses before any tensor
};

/// How the stored value relates to theta, the linear coefficient of the term
/// (term = theta * feature).
enum class Form {
  linear,  ///< theta = value
  rate,    ///< theta = 1 / (value * unit): the value is a rate (TFLOP/s, GB/s)
  ratio,   ///< theta = value * theta of `base` (gemm_half_tokens: tokens of the GEMM rate);
           ///< evaluated inside base's feature, fitted as a column of its own
};

/// How calibration moves a coefficient.
enum class Fit {
  linear,  ///< a column of its term's (relative) least-squares design matrix
  own,     ///< its own step after the linear fit (docs/cost-model.md says how)
  never,   ///< a prior: measurements cannot identify it; the profile's value is kept
};

struct Coefficient {
  const char* name;                          ///< the TOML key in [time] or [memory]
  double TimeCoefficients::*time = nullptr;  ///< the field, when in [time]
  double MemoryCoefficients::*memory = nullptr;  ///< the field, when in [memory]
  Term term;
  Form form;
  double unit;           ///< rate unit in per-second terms (1e12 for TFLOP/s), else 1
  bool precision_scaled;  ///< a FLOP rate: scaled by the datasheet ratio in another precision
  /// The regressor theta multiplies, given the other coefficients (Hockney's n_1/2 inside the
  /// GEMM feature, the recompute share inside the host operators).
  double (*feature)(const Features& f, const HardwareModel& hw);
  const char* base;         ///< Form::ratio: the name of the coefficient whose theta it scales
  double prior;             ///< the default of model::HardwareModel
  Range range;              ///< what a profile may hold (hwprofiles/ checks it)
  Fit fit;
  const char* why;          ///< one line: what it stands for

  const char* section() const { return time ? "time" : "memory"; }
  double& of(HardwareModel& hw) const { return time ? hw.time.*time : hw.memory.*memory; }
  double of(const HardwareModel& hw) const { return time ? hw.time.*time : hw.memory.*memory; }
  /// theta for `hw`; `rate_scale` multiplies FLOP rates (another precision than the fit's).
  double theta(const HardwareModel& hw, double rate_scale = 1.0) const;
  /// This coefficient's term, theta * feature (Form::ratio: 0, it is inside base's term).
  double term_value(const Features& f, const HardwareModel& hw, double rate_scale = 1.0) const;
};

/// A zero theta on a rate means the data shows no cost for that work: the rate stays finite
/// but so high that its term vanishes (1e9 TFLOP/s: a 1e15-FLOP micro-batch in 1 ns).
inline constexpr double kNoCostRate = 1e9;

/// Every coefficient of [time] then [memory], in the order profiles write them.
const std::vector<Coefficient>& coefficient_table();
/// The entry named `name` (a TOML key), or nullptr.
const Coefficient* find_coefficient(std::string_view name);

/// Sum of `term`'s entries, in table order, for one micro-batch (or the optimizer).
double sum_terms(Term term, const Features& f, const HardwareModel& hw, double rate_scale = 1.0);

}  // namespace lorasim::model
