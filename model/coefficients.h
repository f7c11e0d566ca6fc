// The coefficient table: every number of a hardware profile's cost model, for every training
// stack, once. A row is one coefficient: the regressor (feature) it multiplies, the term it
// belongs to, and its entries -- prior, allowed range, how calibration fits it and which TOML
// section holds it: the device's ([time]/[memory]/[profile], lorasim's runner fits it), and,
// by the stack's name, those of stacks with a value of their own ([stack.hf-peft]). A stack a
// row does not name reads the device's. A device row (rates, kernel floors, overlap, context)
// names no stack: stored once and shared by every stack. model/cost_model.cpp evaluates the equations through it,
// calibrate/fit*.cpp builds its design matrices from it and hwprofiles/ reads, checks and writes
// the profile from it: adding a coefficient is one row here (and its field in Coefficients).
#pragma once
#include <cstddef>
#include <iterator>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "model/stack.h"

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
  double tokens = 0;                 ///< tokens of the micro-batch (rows x row length)
  double fused_head_tokens = 0;      ///< the same when TRL's fused LM head runs the loss, else 0
  /// A loss that works through one fixed-size tile (TRL's fused LM head): bytes per token of it
  /// and the tokens it holds at most. Not linear in the micro-batch, so the cost model adds
  /// min(tokens, loss_tile_tokens) x loss_tile_bytes_per_token to the loss's transients per split.
  double loss_tile_bytes_per_token = 0, loss_tile_tokens = 0;
  double saved_bytes = 0;            ///< activations saved for backward
  double attention_score_bytes = 0;  ///< unfused attention scores
  double logits_bytes = 0;           ///< logits and loss buffers
  double recompute_bytes = 0;        ///< one checkpointed block rebuilt in backward
  double logits_buffer_bytes = 0;    ///< one logits tensor (the allocator's worst slack)
  double family_memory_error = 0;    ///< model/architecture.h: the worst case's share for a new family
  /// 1 where the step runs an option whose counts were seen to miss more (checkpointing, LoRA
  /// dropout, no autocast): the worst case adds worst_case_margin_options there; else 0.
  double worst_case_options = 0;
  /// Stored bytes of a quantized base's projections dequantized per micro-batch (forward passes
  /// and backward; model/quant_memory.h). Independent of the micro-batch; 0 for a float base.
  double dequant_weight_bytes = 0;
  /// The quantized projections' calls per micro-batch, the same passes (model/quant_memory.h).
  double quant_linear_calls = 0;
  double static_bytes = 0;           ///< weights + adapters + gradients + optimizer state
  double lora_tensors = 0;           ///< adapter tensors (the optimizer's per-tensor work)
  double trainable_params = 0;       ///< adapter parameters (the optimizer's per-parameter work)
  /// The allocated peak that the reserved model scales: the measured one in the fit,
  /// peak_memory's own prediction otherwise (features() leaves it 0).
  double allocated_bytes = 0;
};

/// Each feature is marked here as growing linearly with the micro-batch (at a fixed sequence
/// length) or not: CostModel::at scales the first from one evaluation at micro-batch 1. A field
/// added to Features without a mark fails the static_assert below.
inline constexpr double Features::*kPerMicroBatch[] = {
    &Features::gemm_flops,      &Features::head_flops,   &Features::attention_flops,
    &Features::memory_bytes,    &Features::loss_bytes,   &Features::tokens,
    &Features::fused_head_tokens, &Features::saved_bytes, &Features::attention_score_bytes,
    &Features::logits_bytes,    &Features::recompute_bytes, &Features::logits_buffer_bytes,
};
/// The same whatever the micro-batch: operator counts, per-token and per-workload constants, a
/// loss tile's size (with_loss_tile adds its bytes per split), and allocated_bytes (set by its users).
inline constexpr double Features::*kPerWorkload[] = {
    &Features::gemm_flops_per_token, &Features::host_ops,         &Features::recompute_ops,
    &Features::loss_tile_bytes_per_token, &Features::loss_tile_tokens, &Features::family_memory_error,
    &Features::worst_case_options,
    &Features::dequant_weight_bytes, &Features::quant_linear_calls, &Features::static_bytes,
    &Features::lora_tensors,         &Features::trainable_params, &Features::allocated_bytes,
};
namespace detail {
constexpr bool marked_once() {
  constexpr size_t n = std::size(kPerMicroBatch), m = std::size(kPerWorkload);
  for (size_t i = 0; i < n + m; ++i)
    for (size_t j = i + 1; j < n + m; ++j)
      if ((i < n ? kPerMicroBatch[i] : kPerWorkload[i - n]) == (j < n ? kPerMicroBatch[j] : kPerWorkload[j - n]))
        return false;
  return true;
}
}  // namespace detail
static_assert(detail::marked_once() &&
                  (std::size(kPerMicroBatch) + std::size(kPerWorkload)) * sizeof(double) == sizeof(Features),
              "mark every field of Features once, in kPerMicroBatch or kPerWorkload");

/// Every row's value for one stack: what the equations read (model::resolve fills it from a
/// HardwareModel). docs/cost-model.md says what each stands for; the table's `why` too.
struct Coefficients {
  double host_fixed_s = 0, host_per_op_s = 0, recompute_host_share = 1;
  double host_per_quant_call_s = 0;  ///< a quantized base's host dispatch, per quantized projection call
  double device_scale = 1, head_device_scale = 1;  ///< a stack's device time over the device's terms
  double device_fixed_s = 0, gemm_tflops = 1, gemm_half_tokens = 0, head_tflops = 1, attention_tflops = 1;
  double memory_gbps = 1, loss_gbps = 1, per_kernel_s = 0, overlap_loss = 0, launch_queue_ops = 1024;
  double dequant_s_per_weight_byte = 0;  ///< a quantized base's dequantization, per stored byte
  double optimizer_fixed_s = 0, optimizer_per_tensor_s = 0, optimizer_device_per_tensor_s = 0,
         optimizer_per_param_s = 0;
  double saved_scale = 1, attention_score_scale = 0, logits_scale = 1, workspace_bytes = 0;
  double reserved_scale = 1, reserved_overhead_bytes = 0, reserved_activation_share = 0, reserved_logits_share = 0;
  /// A quantized base under TRL's fused LM head: allocator slack per byte of saved activations.
  double reserved_quant_fused_share = 0;
  double context_bytes = 0;
  double expected_time_error = 0.5, expected_memory_error = 0.2;
  double host_spread = 0, device_spread = 0;  ///< the step-time range's relative deviations
  double worst_case_margin = 0;               ///< share of the variable memory the worst case adds
  double worst_case_margin_options = 0;       ///< added to it where Features::worst_case_options is 1
  double worst_case_bytes = 0;                ///< bytes the worst case adds whatever the micro-batch
  /// Data of many lengths (simulator/lengths_sim.h): seconds a micro-batch of a shape new to the
  /// process adds, and the caching allocator's extra hold under varying shapes as a share of the
  /// worst micro-batch's activations, expected and bound, for each allocator; and what the
  /// default allocator needs at the memory limit, where it gives its unused cache back before it
  /// fails (0: not measured, the bound then decides whether a split fits).
  double new_shape_s = 0;
  /// Seconds a training process's first step adds beyond its shapes' (CUDA/cuBLAS set-up, the
  /// optimizer's state): paid once by the first split a process runs, so once per fresh epoch.
  double first_step_s = 0;
  /// What TRL's fused LM head adds to that first step: its Triton kernels, loaded from the
  /// machine's kernel cache by every process.
  double first_step_fused_head_s = 0;
  /// What the first training process on a machine adds once (kernel images read from disk, the
  /// fused head's Triton kernels compiled into the cache): the high end of an epoch's range only,
  /// because later runs on the machine do not pay it.
  double cold_start_s = 0;
  double varying_share_default = 0, varying_bound_default = 0, varying_need_default = 0;
  /// varying_need_default where every micro-batch has the worst one's width, for checkpointed
  /// runs: their need falls linearly from varying_need_default as that width recurs.
  double varying_need_recurring = 0;
  double varying_share_expandable = 0, varying_bound_expandable = 0;
  /// TRL's fused LM head: device seconds per token beyond what its FLOPs and traffic count.
  double fused_head_s_per_token = 0;
};

/// What a fresh training process's first step adds beyond its shapes: first_step_s, and the
/// fused head's kernels where the stack runs TRL's fused LM head.
double process_first_step_s(const Coefficients& c, bool fused_lm_head);

/// The same micro-batch when it is not the first of its step: it also dispatches one
/// gradient-accumulation add per adapter tensor.
Features accumulating(const Features& f);

/// The share of overlap_loss that applies to a micro-batch of `host_ops` operators: 0 while
/// the whole micro-batch fits in the launch queue, approaching 1 for very long ones.
double overlap_share(double host_ops, const Coefficients& c);

/// With gradient checkpointing, whether the rebuilt block (with its scores), not the loss's
/// buffers, sets the allocated peak; false without checkpointing.
bool rebuilt_block_sets_peak(const Features& f, const Coefficients& c);

/// What a profile number may hold. Every number must also be finite.
enum class Range {
  positive,        ///< counts the equations divide by: 0 would divide by zero
  rate,            ///< a rate: in [kMinRate, kNoCostRate] (1e-300 TFLOP/s is a typo, not a GPU)
  non_negative,    ///< times, scales, datasheet peaks (0 = unknown / unsupported)
  bytes,           ///< a byte count in [0, kMaxBytes]
  share,           ///< [0, 1]: a part of a whole
  fraction,        ///< [0, 1): a relative deviation
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
  reserved,          ///< reserved line: reserved_scale * allocated + reserved_overhead_bytes
  reserved_slack,    ///< a stack's allocator slack beyond the line (per activation byte, per logits tensor)
  shape,             ///< in no sum: shapes another term, how host and device combine, or a range
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

/// A zero theta on a rate means the data shows no cost for that work: the rate stays finite
/// but so high that its term vanishes (1e9 TFLOP/s: a 1e15-FLOP micro-batch in 1 ns).
inline constexpr double kNoCostRate = 1e9;
/// The slowest rate a profile may hold (1 MFLOP/s, 1 MB/s): below it a micro-batch takes years.
inline constexpr double kMinRate = 1e-6;
/// The largest byte count a profile may hold (1 PiB: every count stays exact and printable).
inline constexpr double kMaxBytes = 1125899906842624.0;

/// One stack's view of a row.
struct StackEntry {
  /// The TOML section that holds the value ("time", "memory", "profile", "stack.hf-peft");
  /// nullptr: the stack does not store it, and the value is `prior` (or `same_as`'s).
  const char* section = nullptr;
  double prior = 0;  ///< the value when no profile says otherwise
  Range range = Range::non_negative;
  Fit fit = Fit::never;
  /// A profile written before the row existed may lack the key: `prior` stands in for it,
  /// the value those profiles predicted with. Otherwise a missing key is an error.
  bool optional = false;
  /// The value is that row's, for this stack (not stored twice): lorasim's spreads are its
  /// expected time error.
  const char* same_as = nullptr;
};

/// A stack's own entry in a row, by the stack's name (its TrainingStack::name()).
struct OwnEntry {
  std::string stack;  ///< "hf-peft"
  StackEntry entry;
  int stored = -1;    ///< set by the table: its index in stored_values() (-1: it stores none)
};

struct Coefficient {
  const char* name;                      ///< the TOML key
  double Coefficients::*field = nullptr; ///< where the equations read it (nullptr: no equation yet)
  Term term = Term::shape;
  Form form = Form::linear;
  double unit = 1;                ///< rate unit in per-second terms (1e12 for TFLOP/s), else 1
  bool precision_scaled = false;  ///< a FLOP rate: scaled by the datasheet ratio in another precision
  /// The regressor theta multiplies, given the other coefficients (Hockney's n_1/2 inside the
  /// GEMM feature, the recompute share inside the host operators).
  double (*feature)(const Features& f, const Coefficients& c) = nullptr;
  const char* base = nullptr;  ///< Form::ratio: the name of the coefficient whose theta it scales
  const char* why = "";        ///< one line: what it stands for
  /// The device's entry ([time], [memory], [profile]): what the stack that calibrates the device
  /// (TrainingStack::calibrates_device, lorasim's runner) stores and fits, and what every stack
  /// without an entry of its own reads -- the stored value, the same prior, or the same other
  /// row's value -- but never fits.
  StackEntry device;
  /// The stacks with an entry of their own, by name: a stack a row does not name needs no entry.
  std::vector<OwnEntry> own;
  /// Set by the table, per registered stack (StackKind::index): the entry that stack reads the
  /// row by, and the index in stored_values() it reads (-1: the entry's prior).
  std::vector<StackEntry> entries;
  std::vector<int> slot;
  int device_stored = -1;  ///< set by the table: the device entry's index in stored_values()

  const StackEntry& in(StackKind s) const { return entries[static_cast<size_t>(s.index)]; }
  /// `stack`'s own entry, or nullptr when it reads the device's.
  const OwnEntry* own_entry(std::string_view stack) const;
  /// A device row: no stack has an entry of its own, every stack reads the one stored value.
  bool shared() const { return own.empty(); }
  double& of(Coefficients& c) const { return c.*field; }
  double of(const Coefficients& c) const { return c.*field; }
  /// Whether `s` stores the value itself (in its section, not another stack's or row's):
  /// what a fit of `s`'s rows may write.
  bool owned_by(StackKind s) const { return in(s).section && !in(s).same_as; }
  /// theta for `c`; `rate_scale` multiplies FLOP rates (another precision than the fit's).
  double theta(const Coefficients& c, double rate_scale = 1.0) const;
  /// This coefficient's term, theta * feature (Form::ratio: 0, it is inside base's term).
  double term_value(const Features& f, const Coefficients& c, double rate_scale = 1.0) const;
};

/// A value a profile holds: one row in one section (a shared row is one, whoever reads it).
struct StoredValue {
  const Coefficient* row;
  StackKind stack;  ///< the stack whose entry describes it
  const StackEntry& entry() const { return row->in(stack); }
};

/// Every row, in the order profiles write them within each section.
const std::deque<Coefficient>& coefficient_table();
/// The row named `name` (a TOML key), or nullptr.
const Coefficient* find_coefficient(std::string_view name);
/// Every stored value, in table order; HardwareModel::values holds one number per entry.
const std::vector<StoredValue>& stored_values();

/// Appends a row to the process's table (for tests, and for a coefficient under trial). Rows
/// added after a HardwareModel was built are not in it: build models afterwards (or
/// complete_values). The stacks its own entries name must be registered.
void add_coefficient(const Coefficient& row);
/// Gives the registered stack `stack` an entry of its own in the row named `row`: a stack added
/// at run time (model::register_stack) brings its rows' entries so. Throws InputError for an
/// unknown row or stack, or a row that already names the stack.
void add_stack_entry(std::string_view row, std::string_view stack, const StackEntry& entry);
/// Called by model::register_stack: sizes every row's per-stack entries for the new stack.
void refresh_stacks();

/// Sum of `term`'s entries, in table order, for one micro-batch (or the optimizer).
double sum_terms(Term term, const Features& f, const Coefficients& c, double rate_scale = 1.0);

}  // namespace lorasim::model
