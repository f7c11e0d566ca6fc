// The calibration plan of the hf-peft stack: short real Transformers + PEFT training runs,
// executed by the Python probe (python/lorasim_hf/probe.py), chosen to separate what the stack
// adds to the GPU's own costs: host time per micro-batch, per decoder layer and per adapter
// (varying depth and targets), the device work its graph adds (varying the micro-batch and
// the length), and its memory with and without checkpointing, dropout, autocast and either
// allocator mode, then runs on data of many lengths (new shapes' time, the allocator's hold under
// varying shapes), runs through TRL's fused LM head (its time per token), and for a quantized
// reference runs on that base (its dequantization and host dispatch). The plan is plain data: it is written as JSON for the probe, and the probe
// streams one measurement row per run back (docs/measurements.md).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/measurement.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::calib {

struct HfPlanOptions {
  bool is_cuda = true;                ///< the probe runs on a GPU (else the CPU: tiny sizes)
  /// Full-depth reference; its stack options are the user's. A quantized base (its weight_format,
  /// double_quant) adds the quantized runs; every other run trains the float base.
  model::Workload reference;
  std::string narrow_model = "auto";  ///< a second, narrower preset; "auto": qwen2.5-0.5b on CUDA
  int warmup_steps = 1;               ///< optimizer steps run before timing
  int measure_steps = 3;              ///< timed optimizer steps per run
  /// The GPU the plan runs on, and its memory: a run whose predicted worst case would not fit
  /// in kPlanMemoryShare of it shrinks (micro-batch, then length) or is left out, so a small
  /// GPU calibrates without out-of-memory runs. 0: no limit (the plan as written).
  model::HardwareModel hardware;
  double memory_limit_bytes = 0;
};

/// The share of the GPU's memory a planned run may take by the prediction: the rest is the
/// prediction's own uncertainty on a GPU the stack has not been calibrated on yet.
inline constexpr double kPlanMemoryShare = 0.85;

/// The plan's own data of many lengths: a long-tailed (log-normal) distribution of token
/// lengths, truncated at the run's seq_len, padded as HF's `pad_to_multiple_of` pads, drawn in a
/// seeded order. Its widths take few enough values that a run meets new shapes and repeats. Its
/// median and padding are shares of the truncation, so a run the plan shrinks (or the CPU's short
/// one) keeps the same shape: at 1024 tokens, median 256 and multiples of 64.
struct HfPlanLengths {
  double median_share = 0.25;  ///< the median length over the truncation
  double sigma = 0.9;          ///< of the log of the length
  int64_t sequences = 1000;    ///< lengths at that many evenly spaced quantiles
  int64_t widths = 16;         ///< padded to multiples of truncation / widths: at most this many widths
  int64_t seed = 0;            ///< the sampler's order
  /// docs/lengths.md's spelling of the padding at `max_length` ("multiple:64" at 1024).
  std::string padding(int64_t max_length) const;
};

/// The lengths of `spec` truncated at `max_length`, as (length, count) ascending: the length at
/// quantile (i + 1/2) / sequences of the log-normal for each i, so the same plan on every platform.
std::vector<std::pair<int64_t, int64_t>> plan_lengths_histogram(const HfPlanLengths& spec, int64_t max_length);

/// One planned run: the workload (truncated to a few layers), the split, and the process
/// (allocator mode) it runs in.
struct HfPlannedRun {
  Measurement planned;  ///< workload and split; no figures
  /// Trains on the plan's lengths (seq_len is their truncation) instead of seq_len-token rows.
  bool varied_lengths = false;
  HfPlanLengths lengths;
  int steps = 0, warmup_steps = -1;  ///< this run's own counts (0 / -1: the plan's)
  std::string label() const;
};

/// Timed steps of a run on the plan's lengths: enough micro-batches that some widths repeat.
inline constexpr int kVariedSteps = 24;
/// Its replay, at accumulation 2: the first kVariedReplaySteps x 2 + 2 micro-batches of the same
/// seeded order (the warm-up step's two included), every shape of which the first run met.
inline constexpr int kVariedReplaySteps = 11;

/// The default plan. Every run uses the reference's stack options except where a run exists
/// to vary one (dropout, autocast, targets, allocator); the allocator mode is a property of
/// the process, so runs are grouped by it.
std::vector<HfPlannedRun> default_hf_plan(const HfPlanOptions& opt);

/// The plan of a stack that runs hf-peft's model code under its own loop (lightning): only the
/// loop's host terms and device scales are its own (model/stacks/lightning_stack.h), so a few
/// host-bound and device-bound runs at two depths and at the reference's full depth identify them.
std::vector<HfPlannedRun> default_loop_plan(const HfPlanOptions& opt);

/// A Hugging Face config.json object for `arch` (model_type qwen3 with q/k norms, qwen2 with
/// q/k/v biases, Gemma's and Phi-3's own with their windows and soft-caps, llama otherwise), as
/// the probe builds the model from it.
std::string hf_config_json(const model::Architecture& arch);

/// The probe's plan file for the runs of one allocator mode and either the float or the quantized
/// base (one probe process each: the probe's --quant is per process): {"device", "allocator", "runs": [...]};
/// a run on the plan's lengths carries "lengths" ([[length, count], ...]), "padding" and
/// "lengths_seed", and every run "fused_lm_head".
std::string hf_plan_json(const std::vector<HfPlannedRun>& runs, const std::string& device,
                         model::AllocatorMode allocator, int warmup_steps, int measure_steps, bool quantized = false);

}  // namespace lorasim::calib
