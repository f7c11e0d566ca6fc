// The rows of the coefficient table. One row is one coefficient; its entries say which section
// holds it, its prior, range and fit: the device's entry ([time]/[memory]/[profile], which the
// runner's calibration fits and every stack without an entry of its own reads), then the stacks'
// own entries by name (hf-peft's, `hf`; the loop's host rows lightning's too, `hf_and_loop`). A device row (`device`) has no stack's own entry. The hf-peft priors are the H200 calibration's values, rounded
// (hwprofiles/h200.toml, bench/results/h200/hf-peft-run7), treated like the datasheet priors'
// device-independent constants: host dispatch is the CPU's, the memory terms are counts.
#include "model/coefficient_rows.h"

#include <algorithm>
#include <utility>


namespace lorasim::model::detail {
namespace {

using F = const Features&;
using C = const Coefficients&;
using K = Coefficients;
constexpr double kTera = 1e12, kGiga = 1e9;
constexpr const char* kHf = "stack.hf-peft";
constexpr const char* kPl = "stack.lightning";

double one(F, C) { return 1.0; }
// A quantized base whose loss is TRL's fused LM head: no vocabulary-sized block is freed for the
// activations to reuse, and its tile is one block the allocator hands back at its own size, so
// its slack is reserved_quant_fused_share's, not the logits share fitted on Transformers' loss.
bool quant_fused(F f) { return f.dequant_weight_bytes > 0 && f.fused_head_tokens > 0; }

// The rebuilt-block and loss-buffer sides of a checkpointed peak (model::peak_memory):
// each scale's regressor is what it multiplies on the side the coefficients pick.
double saved_feature(F f, C c) {
  return rebuilt_block_sets_peak(f, c) ? f.saved_bytes + f.recompute_bytes : f.saved_bytes;
}
double score_feature(F f, C c) {
  return f.recompute_bytes > 0 && !rebuilt_block_sets_peak(f, c) ? 0.0 : f.attention_score_bytes;
}
double logits_feature(F f, C c) { return rebuilt_block_sets_peak(f, c) ? 0.0 : f.logits_bytes; }

double overlap_feature(F f, C c) {
  const double host = sum_terms(Term::host, f, c);
  const double device =
      sum_terms(Term::device, f, c) + sum_terms(Term::device_traffic, f, c) + sum_terms(Term::device_kernels, f, c);
  return overlap_share(f.host_ops, c) * std::min(host, device);
}

// Entries.
StackEntry in(const char* section, double prior, Range range, Fit fit, bool optional = false) {
  return {section, prior, range, fit, optional, nullptr};
}
StackEntry fixed(double prior) { return {nullptr, prior, Range::non_negative, Fit::never, false, nullptr}; }
StackEntry same_as(const char* row) { return {nullptr, 0, Range::non_negative, Fit::never, false, row}; }

// A stack's own entries in a row, by its name: hf-peft's, in its section.
std::vector<OwnEntry> hf(StackEntry entry) { return {{"hf-peft", entry, -1}}; }
// A row of a Trainer's loop that Lightning's loop runs otherwise: hf-peft's entry and lightning's,
// with the same prior (lightning reads every other row as hf-peft's). The device scales are among
// them: Trainer's nan/inf filter reads every micro-batch's loss on the host, a sync that keeps the
// host from dispatching the next micro-batch while the device runs this one's backward, and the
// hf-peft fit's device scales hold that; Lightning's loop does not sync per micro-batch.
std::vector<OwnEntry> hf_and_loop(StackEntry entry) {
  StackEntry loop = entry;
  loop.section = kPl;
  return {{"hf-peft", entry, -1}, {"lightning", loop, -1}};
}

// A row: the device's entry (the runner's section, what a stack without its own entry reads)
// and the stacks' own entries.
Coefficient row(const char* name, double K::*field, Term term, double (*feature)(F, C), const char* why,
                StackEntry device, std::vector<OwnEntry> own = {}) {
  Coefficient c;
  c.name = name;
  c.field = field;
  c.term = term;
  c.feature = feature;
  c.why = why;
  c.device = device;
  c.own = std::move(own);
  return c;
}
// A device row: stored once in `section`, fitted by the runner's calibration, read by every
// stack (none has an entry of its own).
Coefficient device(const char* name, double K::*field, Term term, double (*feature)(F, C), const char* why,
                   StackEntry entry) {
  return row(name, field, term, feature, why, entry);
}
Coefficient rate(Coefficient c, double unit, bool precision_scaled) {
  c.form = Form::rate;
  c.unit = unit;
  c.precision_scaled = precision_scaled;
  return c;
}

}  // namespace

std::vector<Coefficient> coefficient_rows() {
  const auto nn = Range::non_negative, pos = Range::positive, r = Range::rate, b = Range::bytes;
  const auto lin = Fit::linear, own = Fit::own, never = Fit::never;
  Coefficient half = device("gemm_half_tokens", &K::gemm_half_tokens, Term::device, [](F f, C) { return f.gemm_flops_per_token; },
                            "tokens at which the GEMMs reach half their rate (Hockney n_1/2): a fixed cost per GEMM",
                            in("time", 0, nn, lin));
  half.form = Form::ratio;
  half.base = "gemm_tflops";
  return {
      row("host_fixed_s", &K::host_fixed_s, Term::host, one,
          "host time per micro-batch whatever its size (Python/C++ loop, data to device, autograd setup)",
          in("time", 0, nn, lin), hf_and_loop(in(kHf, 2.5e-3, nn, lin))),
      row("host_per_op_s", &K::host_per_op_s, Term::host,
          [](F f, C c) { return f.host_ops - (1 - c.recompute_host_share) * f.recompute_ops; },
          "host dispatch per operator (Python module calls included); recomputing operators count at "
          "recompute_host_share",
          in("time", 0, nn, lin), hf_and_loop(in(kHf, 2.5e-5, nn, lin))),
      // recompute_host_share came after the first profiles; without it they predicted share 1.
      row("recompute_host_share", &K::recompute_host_share, Term::shape,
          [](F f, C c) { return c.host_per_op_s * f.recompute_ops; },
          "host cost of checkpointing's extra forward per operator, relative to an ordinary one; fitted from "
          "host-bound checkpointed rows with the host line known",
          in("time", 1, nn, own, true), hf(in(kHf, 2.5, nn, own))),
      // bitsandbytes' Linear4bit / MatMul4Bit run more Python per call than an nn.Linear (the
      // quant state, the dtype checks, an autograd Function). Prior 0: what the host line alone
      // predicted; fitted by its own step from host-bound quantized rows (calibrate/fit_quant.cpp).
      row("host_per_quant_call_s", &K::host_per_quant_call_s, Term::host, [](F f, C) { return f.quant_linear_calls; },
          "a quantized base's host dispatch beyond the host line: seconds per quantized projection call "
          "(forward passes and backward)",
          fixed(0), hf(in(kHf, 0, nn, own, true))),
      row("device_scale", &K::device_scale, Term::shape, nullptr,
          "device time of the stack's graph relative to the device's terms on the stack's counts (extra casts, "
          "copies and kernels the counts miss); 1 for the runner, whose graph the device terms were fitted on",
          fixed(1), hf_and_loop(in(kHf, 1.07, pos, own))),
      row("head_device_scale", &K::head_device_scale, Term::shape, nullptr,
          "the same for the LM head and the loss over the vocabulary (the stack's fp32 upcast and log-softmax)",
          fixed(1), hf_and_loop(in(kHf, 0.82, pos, own))),
      device("device_fixed_s", &K::device_fixed_s, Term::device, one, "device time per micro-batch whatever its size",
             in("time", 0, nn, lin)),
      rate(device("gemm_tflops", &K::gemm_tflops, Term::device,
                  [](F f, C c) { return f.gemm_flops + f.gemm_flops_per_token * c.gemm_half_tokens; },
                  "asymptotic rate of the blocks' GEMMs; its feature includes Hockney's fixed cost per GEMM",
                  in("time", 1, r, lin)),
           kTera, true),
      half,
      rate(device("head_tflops", &K::head_tflops, Term::device, [](F f, C) { return f.head_flops; },
                  "LM-head rate: one large GEMM, faster than the blocks' small ones", in("time", 1, r, lin)),
           kTera, true),
      rate(device("attention_tflops", &K::attention_tflops, Term::device, [](F f, C) { return f.attention_flops; },
                  "attention kernels' rate", in("time", 1, r, lin)),
           kTera, true),
      rate(device("memory_gbps", &K::memory_gbps, Term::device_traffic, [](F f, C) { return f.memory_bytes; },
                  "bandwidth of the blocks' memory-bound operators (norms, RoPE, SwiGLU, adds, adapters)",
                  in("time", 1, r, lin)),
           kGiga, false),
      rate(device("loss_gbps", &K::loss_gbps, Term::device_traffic, [](F f, C) { return f.loss_bytes; },
                  "bandwidth of the softmax and loss over the vocabulary", in("time", 1, r, lin)),
           kGiga, false),
      // bitsandbytes dequantizes each 4-bit / 8-bit projection into the compute dtype before a
      // dense matmul (more than 1536 tokens), in each forward and again in the backward. Prior:
      // the kernel reads a stored byte and writes ~3.9 (bf16 per NF4 parameter: 2 / 0.516) at
      // ~2.9 TB/s (60% of the H200's HBM3e), 1.7e-12 s per stored byte. Fitted by its own step
      // from device-bound quantized rows (calibrate/fit_quant.cpp); optional: profiles written
      // before it predict with the prior.
      row("dequant_s_per_weight_byte", &K::dequant_s_per_weight_byte, Term::device_traffic,
          [](F f, C) { return f.dequant_weight_bytes; },
          "a quantized base's dequantization: device seconds per stored weight byte dequantized (forward "
          "passes and backward)",
          fixed(0), hf(in(kHf, 1.7e-12, nn, own, true))),
      device("per_kernel_s", &K::per_kernel_s, Term::device_kernels, [](F f, C) { return f.host_ops; },
             "device time floor per operator (launch latency, tiny kernels)", in("time", 0, nn, lin)),
      // The runner's C++ loop and Python's dispatch overlap the device differently: fitted on the
      // runner's rows (0 on the H200, 0.082 on an H100), it is hf-peft's prior 0 -- the H200's, which
      // its calibration rows and held-out runs were predicted with (docs/cost-model.md, "Overlap").
      row("overlap_loss", &K::overlap_loss, Term::shape, overlap_feature,
          "share of min(host, device) that fails to overlap beyond the launch queue; fitted from the "
          "steady-state micro-batch times once host and device are known",
          in("time", 0, Range::share, own), hf(in(kHf, 0, Range::share, never, true))),
      device("launch_queue_ops", &K::launch_queue_ops, Term::shape, nullptr,
             "operators the host runs ahead of the device (CUDA's launch queue): a prior, never fitted; a "
             "threshold of overlap_loss's feature, not a multiplier",
             in("time", 1024, pos, never)),
      row("optimizer_fixed_s", &K::optimizer_fixed_s, Term::optimizer_host, one,
          "AdamW step + zero_grad (fused AdamW + clipping under Trainer): host time, fixed part",
          in("time", 0, nn, lin), hf_and_loop(in(kHf, 1.2e-3, nn, lin))),
      row("optimizer_per_tensor_s", &K::optimizer_per_tensor_s, Term::optimizer_host,
          [](F f, C) { return f.lora_tensors; },
          "host dispatch per adapter tensor (the optimizer updates one tensor at a time)", in("time", 0, nn, lin),
          hf_and_loop(in(kHf, 4.2e-5, nn, lin))),
      device("optimizer_device_per_tensor_s", &K::optimizer_device_per_tensor_s, Term::optimizer_device,
             [](F f, C) { return f.lora_tensors; }, "device time per adapter tensor", in("time", 0, nn, lin)),
      device("optimizer_per_param_s", &K::optimizer_per_param_s, Term::optimizer_device,
             [](F f, C) { return f.trainable_params; }, "device time per trainable parameter (the update's bandwidth)",
             in("time", 0, nn, lin)),
      row("saved_scale", &K::saved_scale, Term::allocated, saved_feature,
          "x the counted activations saved for backward (and a rebuilt block's, when it sets the peak)",
          in("memory", 1, nn, lin), hf(in(kHf, 1.0, nn, lin))),
      row("attention_score_scale", &K::attention_score_scale, Term::allocated, score_feature,
          "x the b*H*s*s attention scores (0 with fused attention); the hf-peft counts include eager "
          "attention's scores themselves",
          in("memory", 0, nn, lin), hf(fixed(1.0))),
      row("logits_scale", &K::logits_scale, Term::allocated, logits_feature, "x the counted logits and loss buffers",
          in("memory", 1, nn, lin), hf(in(kHf, 1.0, nn, lin))),
      row("workspace_bytes", &K::workspace_bytes, Term::allocated, one,
          "allocator-visible constant (library workspaces, tables)", in("memory", 0, b, lin), hf(in(kHf, 5.98e7, b, lin))),
      row("reserved_scale", &K::reserved_scale, Term::reserved, [](F f, C) { return f.allocated_bytes; },
          "the caching allocator's reserved memory per allocated byte (hf-peft: 1, the slack rows carry it; an "
          "anchored fit may move it)",
          in("memory", 1, nn, lin), hf(in(kHf, 1.0, pos, own))),
      row("reserved_overhead_bytes", &K::reserved_overhead_bytes, Term::reserved, one,
          "the caching allocator's constant overhead", in("memory", 0, b, lin), hf(in(kHf, 5.65e7, b, lin))),
      // Blocks freed between the forward's and the backward's allocations leave gaps in
      // proportion to the activations, and the loss's vocabulary-sized transients their own.
      row("reserved_activation_share", &K::reserved_activation_share, Term::reserved_slack,
          [](F f, C) { return f.allocated_bytes - f.static_bytes; },
          "allocator slack per byte of activations (allocated beyond the static memory)", fixed(0),
          hf(in(kHf, 0.0, nn, lin))),
      row("reserved_logits_share", &K::reserved_logits_share, Term::reserved_slack,
          [](F f, C) { return quant_fused(f) ? 0.0 : f.logits_buffer_bytes; },
          "allocator slack in half-precision logits tensors (the loss's large transient blocks; a quantized base "
          "under the fused head: reserved_quant_fused_share instead)", fixed(0),
          hf(in(kHf, 1.19, nn, lin))),
      // A quantized base dequantizes each projection's weight into a block of its own fixed size
      // between the blocks' activations, forward and again in the backward; under TRL's fused
      // LM head no vocabulary-sized block is freed for the activations to reuse, and the measured
      // slack grows with them (docs/hf-stack-memory.md, "Known limit: the reserved slack of
      // SFTTrainer on a 4-bit base"). Fitted on the FIT rows of bench/hf/models_accuracy.py
      // (llama-3.2-3b's four SFTTrainer QLoRA rows, `--fit`); optional: a profile without it
      // predicts that slack as the overhead alone.
      row("reserved_quant_fused_share", &K::reserved_quant_fused_share, Term::reserved_slack,
          [](F f, C) { return quant_fused(f) ? f.saved_bytes : 0.0; },
          "allocator slack per byte of saved activations of a quantized base under TRL's fused LM head (the "
          "dequantized weights' gaps among the activations); 0 otherwise",
          fixed(0), hf(in(kHf, 0.0, nn, never, true))),
      device("context_bytes", &K::context_bytes, Term::limit, one,
             "device memory outside the allocator (CUDA context, kernel images): a prior, never fitted (no "
             "measured peak includes it)",
             in("memory", 0, b, never)),
      row("expected_time_error", &K::expected_time_error, Term::shape, nullptr,
          "typical relative step-time error of these coefficients", in("profile", 0.5, Range::relative_error, never),
          hf(in(kHf, 0.3, nn, never))),
      row("expected_memory_error", &K::expected_memory_error, Term::shape, nullptr,
          "typical relative peak-memory error", in("profile", 0.2, Range::relative_error, never),
          hf(in(kHf, 0.05, nn, never))),
      // A prior's device term (model::PriorErrors::memory_bytes): what a GPU's kernels and
      // libraries hold beyond the count, which no datasheet gives; 0 where a profile predates it.
      row("expected_memory_error_bytes", nullptr, Term::shape, nullptr,
          "a prior's unknown device memory, added whole to the worst case (bytes)",
          in("profile", 0, b, never, true), hf(fixed(0))),
      // The step-time range (StepTime::low_s/high_s): priors, never fitted. The H200's host speed
      // moved 18.5% at most (rms 7.3%) between processes of one lease and its fitted host cost
      // per operator 22% between leases (docs/cost-model.md, "Range"). The runner's profile has
      // no spreads of its own: its expected error stands for both.
      row("host_spread", &K::host_spread, Term::shape, nullptr,
          "relative deviation of the host's time between processes and machines (a prior, not fitted)",
          same_as("expected_time_error"), hf(in(kHf, 0.20, Range::fraction, never))),
      row("device_spread", &K::device_spread, Term::shape, nullptr,
          "relative deviation of the device's time from the prediction (a prior, not fitted)",
          same_as("expected_time_error"), hf(in(kHf, 0.10, Range::fraction, never))),
      // What a measured peak exceeded its count by, as a share of the variable memory (reserved
      // less the exactly counted weights, adapters, gradients and optimizer state): the worst case
      // that decides `fits` (docs/cost-model.md, "Worst case"). The hf-peft shares bound every
      // committed row (bench/results/worst-case.md, lengths-accuracy.md, models-accuracy.md): 2.6%
      // at most for an autocast step of fixed shapes without checkpointing, dropout or a quantized
      // base (47 rows); with any of those, or shapes that vary, 9.4% (a checkpointed 4-bit
      // llama-3.2-3b), 8.7% (varying widths under the default allocator), 6.7% (checkpointing).
      // The runner's is its expected memory error.
      row("worst_case_margin", &K::worst_case_margin, Term::shape, nullptr,
          "share of the variable memory (reserved less the static weights and optimizer state) the worst case adds",
          same_as("expected_memory_error"), hf(in(kHf, 0.04, Range::share, never, true))),
      row("worst_case_margin_options", &K::worst_case_margin_options, Term::shape, nullptr,
          "share added to worst_case_margin where the step checkpoints, runs LoRA dropout, no autocast, a quantized "
          "base or shapes that vary (their counts missed more), or its loop reads another's memory rows (lightning)",
          fixed(0), hf(in(kHf, 0.06, Range::share, never, true))),
      // Where the variable memory is small (micro-batch 1 at short lengths) the excess was a few
      // blocks whatever the size: library workspaces, the allocator's rounding.
      row("worst_case_bytes", &K::worst_case_bytes, Term::shape, nullptr,
          "bytes the worst case adds whatever the micro-batch (workspaces and blocks the count does not see)",
          fixed(0), hf(in(kHf, 268435456.0, b, never, true))),
      // Data of many lengths. Measured on the H200 with Transformers/TRL (bench/results/
      // lengths-accuracy.md says on which rows and how); the runner has not been measured, so
      // its entries are 0 -- it runs with expandable segments, whose share was small there.
      row("new_shape_s", &K::new_shape_s, Term::shape, nullptr,
          "seconds a micro-batch adds when its padded shape is new to the process (kernel and GEMM "
          "heuristics chosen per shape, then cached): the first epoch of varying lengths pays it per new shape",
          fixed(0), hf(in(kHf, 0.18, nn, own))),
      // The calibration's probe discards its process's first step as warm-up, so no calibration row
      // shows these: `python3 bench/hf/epochs_accuracy.py --fit` gives them from the FIT epochs (each
      // a fresh process's first step less its prediction at its widths, less the epoch's steady
      // error), and the values here are those figures rounded. A plain Trainer's and SFTTrainer's
      // first steps differ by TRL's Triton kernels; the first process on a machine pays several
      // seconds more (most likely kernel images read from disk and those kernels compiled).
      row("first_step_s", &K::first_step_s, Term::shape, nullptr,
          "seconds a training process's first step adds beyond its shapes (CUDA/cuBLAS set-up, the optimizer's "
          "state): a fresh process's first epoch pays it once",
          fixed(0), hf(in(kHf, 0.46, nn, never))),
      row("first_step_fused_head_s", &K::first_step_fused_head_s, Term::shape, nullptr,
          "what TRL's fused LM head adds to that first step (its Triton kernels, from the machine's cache)",
          fixed(0), hf(in(kHf, 0.69, nn, never))),
      row("cold_start_s", &K::cold_start_s, Term::shape, nullptr,
          "what the first training process on a machine adds once (kernel images from disk, Triton kernels "
          "compiled): the high end of the epoch's range only",
          fixed(0), hf(in(kHf, 5.5, nn, never))),
      row("varying_share_default", &K::varying_share_default, Term::shape, nullptr,
          "PyTorch's default allocator under varying shapes: expected extra reserved memory per byte of the "
          "worst micro-batch's activations",
          fixed(0), hf(in(kHf, 0.35, nn, own))),
      row("varying_bound_default", &K::varying_bound_default, Term::shape, nullptr,
          "the same share in the worst case: never below a measured peak of the rows it was fitted on",
          fixed(0), hf(in(kHf, 1.51, nn, own))),
      // At the memory limit the default allocator frees its unused cached segments and retries
      // before it reports an out-of-memory, so a split needs far less than the bound above: the
      // allocated peak plus what stays fragmented inside segments in use. Capped runs measure it
      // (bench/hf/pressure_runs.py; bench/results/pressure-accuracy.md says on which rows).
      row("varying_need_default", &K::varying_need_default, Term::shape, nullptr,
          "PyTorch's default allocator under varying shapes at the memory limit: memory needed beyond the worst "
          "micro-batch's allocated peak, per byte of its activations (0: the bound decides whether a split fits)",
          fixed(0), hf(in(kHf, 0.429, nn, own))),
      // With checkpointing, backward recomputes one block at a time, so the blocks it allocates
      // and frees reuse segments that earlier micro-batches cut: cut for the worst width where
      // that width recurs, too narrow where it is rare. Without checkpointing every block's
      // activations live at once and the need is the rare case's however often the width recurs
      // (bench/results/pressure-accuracy.md).
      row("varying_need_recurring", &K::varying_need_recurring, Term::shape, nullptr,
          "varying_need_default for checkpointed runs where every micro-batch has the worst one's width; "
          "the share falls linearly from varying_need_default with how often a micro-batch has it",
          fixed(0), hf(in(kHf, 0.0, nn, own))),
      row("varying_share_expandable", &K::varying_share_expandable, Term::shape, nullptr,
          "expandable segments under varying shapes: expected extra reserved memory per byte of activations",
          fixed(0), hf(in(kHf, 0.0, nn, own))),
      row("varying_bound_expandable", &K::varying_bound_expandable, Term::shape, nullptr,
          "the same share in the worst case", fixed(0), hf(in(kHf, 0.0, nn, own))),
      // TRL's fused LM head recomputes each logits tile in its backward and reduces it in
      // chunks; its FLOPs and traffic count the head once (hf_analytics.cpp). What it costs
      // beyond them is fitted per token from the calibration plan's fused-head runs; 0 until
      // then, which predicts what the counts alone predicted.
      row("fused_head_s_per_token", &K::fused_head_s_per_token, Term::device, [](F f, C) { return f.fused_head_tokens; },
          "device seconds per token TRL's fused LM head adds beyond the head's FLOPs and traffic (its tiles' "
          "recompute and reductions); 0 without the fused head",
          fixed(0), hf(in(kHf, 0, nn, own, true))),
  };
}

}  // namespace lorasim::model::detail
