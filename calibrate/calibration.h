// `lorasim calibrate`: a plan of short real training runs over micro-batch sizes, sequence
// lengths and depths of a reference model, chosen to separate fixed, per-token and
// per-layer costs, then a fit of the cost model to what was measured.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calibrate/device.h"
#include "calibrate/fit.h"
#include "calibrate/measurement.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::calib {

struct CalibrationOptions {
  std::string device = "auto";         ///< auto, cpu, cuda, cuda:N
  model::Workload reference;           ///< full-depth reference workload (its seq_len is ignored)
  std::vector<int64_t> depths;         ///< truncated depths to run; empty: a default per device
  int64_t deep_depth = -1;             ///< a deeper model timed whole (no split); -1: default, 0: none
  /// A second, wider model run at the shallow depths: with one width, GEMM time (which grows
  /// with width squared) and memory-bound time (linear in width) cannot be told apart, and
  /// other models' widths would be mispredicted. "auto": qwen3-8b on CUDA, none on the CPU;
  /// "none"; or a preset name.
  std::string wide_model = "auto";
  /// A narrower model run the same way: widths below the reference's put more weight on
  /// memory-bound and per-GEMM costs, which a wider probe cannot show. "auto": qwen2.5-0.5b
  /// on CUDA, none on the CPU; "none"; or a preset name.
  std::string narrow_model = "auto";
  std::vector<int64_t> seq_lens;       ///< sequence lengths; empty: a default per device
  int64_t max_tokens = 0;              ///< largest micro-batch in tokens; 0: a default per device
  double time_budget_s = 90;           ///< stop adding runs past this (model construction included)
  int64_t memory_limit_bytes = 0;      ///< forwarded to the runner (forces OOM above it)
  int measure_steps = 3;               ///< timed optimizer steps per run
};

/// One planned run.
struct PlannedRun {
  int64_t depth, seq_len, micro_batch, accumulation;
  bool grad_ckpt = false;
  int64_t lora_rank = 0;  ///< 0: the reference's rank
  bool split = true;      ///< also measure host vs device time (needs a shallow model)
  std::string model = "";  ///< another preset than the reference (a probe); empty: the reference
  std::string label() const;
};

/// The wide probe's preset name for these options, or "" for none.
std::string wide_model_name(const CalibrationOptions& opt, bool is_cuda);
/// The narrow probe's preset name for these options, or "" for none.
std::string narrow_model_name(const CalibrationOptions& opt, bool is_cuda);

/// The default plan for a reference workload on a device.
std::vector<PlannedRun> default_plan(const CalibrationOptions& opt, bool is_cuda);

struct CalibrationProgress {
  size_t done = 0, total = 0;   ///< runs finished / planned
  double elapsed_s = 0;
  std::string label;            ///< the run just finished
  const Measurement* result = nullptr;
  bool skipped = false;         ///< skipped (budget or an earlier OOM at a smaller micro-batch)
};
using ProgressCallback = std::function<void(const CalibrationProgress&)>;

struct CalibrationResult {
  DeviceInfo device;
  std::vector<PlannedRun> plan;
  std::vector<Measurement> measurements;  ///< one per run made (OOM runs included)
  size_t skipped = 0;                     ///< planned runs not made
  FitReport fit;
  double duration_s = 0;                  ///< wall time, model construction included
};

/// Runs the plan on the device and fits `base` (datasheet figures kept, coefficients
/// replaced). `should_stop` is polled between runs and between the micro-batches of a run
/// (an interrupt): when it returns true the calibration throws CalibrationError saying how
/// far it got, writing nothing. Throws InputError for a depth beyond the reference model's.
CalibrationResult run_calibration(const CalibrationOptions& opt, const model::HardwareModel& base,
                                  const ProgressCallback& progress,
                                  const std::function<bool()>& should_stop = {});

}  // namespace lorasim::calib
