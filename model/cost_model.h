// The cost model: a workload and a device's coefficients in, micro-batch time, step time
// and peak memory out. The equations of a step are written here once; the fits
// (calibrate/fit_*.cpp) call them and the table's features. Construction does the
// per-workload work once (the stack's features, the table's values for the stack); each
// prediction is a handful of multiply-adds, so the simulator can sweep every split cheaply.
#pragma once
#include <cstdint>

#include "model/coefficients.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::model {

/// The regressors of one micro-batch of `w` under its stack (model/training_stack.h).
Features features(const Workload& w, int64_t micro_batch);

/// A device resolved for one stack: the table's values for it, and the device's overlap mode
/// and datasheet peaks (for rates in another precision). What every equation reads.
struct StackModel {
  StackKind stack = StackKind::lorasim;
  Coefficients c;
  Overlap overlap = Overlap::max;
  Precision coefficients_precision = Precision::bf16;
  double peak_bf16_tflops = 0, peak_fp16_tflops = 0, peak_fp32_tflops = 0;
  /// A prior's expected errors (model::prior_errors): the range and the worst case are at least
  /// this wide. Kept apart from `c`, so a fit that stores `c` back never writes them as spreads.
  PriorErrors prior;

  /// The factor on FLOP rates for a workload in `p` when the rates were fitted in another
  /// precision: the datasheet peak ratio (1 when either peak is unknown).
  double rate_scale(Precision p) const;
};
StackModel stack_model(const HardwareModel& hw, StackKind stack);

struct MicroBatchTime {
  double host_s = 0;    ///< host dispatch time
  double device_s = 0;  ///< device execution time
  double total_s = 0;   ///< both combined per the device's overlap mode
};

/// AdamW over the adapters plus zeroing their gradients, split like a micro-batch.
struct OptimizerTime {
  double host_s = 0;
  double device_s = 0;
};

/// One optimizer step: a micro-batches, then the optimizer.
struct StepTime {
  double host_s = 0;       ///< all host dispatch of the step
  double device_s = 0;     ///< all device execution of the step
  double total_s = 0;      ///< wall time of the step
  /// The range of the wall time: host and device time each off by their spread
  /// (the table's host_spread, device_spread) in the same direction.
  double low_s = 0;
  double high_s = 0;
  bool host_bound = false; ///< host dispatch sets the pace
};

struct MemoryEstimate {
  double peak_allocated_bytes = 0;  ///< tensors alive at the peak
  double peak_reserved_bytes = 0;   ///< what the caching allocator holds from the device
  /// Reserved less the exactly counted static part (weights, adapters, gradients, optimizer
  /// state): what the count can get wrong.
  double variable_bytes = 0;
  /// Reserved plus the stack's worst_case_margin of the variable part and a prior's unknown
  /// device bytes (docs/cost-model.md, "Worst case"). What the simulator checks against the
  /// memory limit.
  double worst_reserved_bytes = 0;
};

double rate_scale(const HardwareModel& hw, Precision p);
/// How much of the shorter side of host and device fails to overlap for `host_ops` operators.
double overlap_coupling(double host_ops, const Coefficients& c);
/// Host and device time combined: max(H, D) + coupling * min(H, D), or H + D on a synchronous device.
double combine(double host_s, double device_s, double coupling, Overlap overlap);
/// Device time of the LM head and the loss over the vocabulary (part of micro_batch_time's).
double head_device_s(const Features& f, const Coefficients& c, double rate_scale = 1.0);
/// Time of one micro-batch from its features.
MicroBatchTime micro_batch_time(const Features& f, const StackModel& m, Precision p);
MemoryEstimate peak_memory(const Features& f, const StackModel& m);
/// Whether `w` runs an option whose counts were seen to miss more (checkpointing, LoRA dropout,
/// a step without autocast, a quantized base): its worst case adds worst_case_margin_options.
/// Data of varying shapes is another (simulator/lengths_sim.h adds it there).
bool runs_worst_case_options(const Workload& w);
/// The stack's share of the variable memory the worst case adds for `w` (a prior's or a new
/// family's may be larger: peak_memory takes the largest).
double worst_case_share(const Coefficients& c, const Workload& w);
/// The optimizer of a workload with these features (its adapter tensors and parameters).
OptimizerTime optimizer_time(const Features& f, const StackModel& m);

class CostModel {
 public:
  CostModel(const Workload& w, const HardwareModel& hw);
  /// On a model already resolved for the workload's stack (a fit's view).
  CostModel(const Workload& w, const StackModel& m);

  /// One micro-batch; `accumulating`: not the first of its step, so it adds into gradients.
  MicroBatchTime micro_batch(int64_t micro_batch, bool accumulating = false) const;
  const OptimizerTime& optimizer() const { return optimizer_; }
  /// The whole step: host and device sums over the micro-batches and the optimizer,
  /// combined like a micro-batch (asynchronous launch overlaps across the step).
  StepTime step(int64_t micro_batch, int64_t accumulation) const;
  double step_time_s(int64_t micro_batch, int64_t accumulation) const {
    return step(micro_batch, accumulation).total_s;
  }
  MemoryEstimate memory(int64_t micro_batch) const;
  /// A step whose micro-batches and optimizer sum to `host_s` and `device_s` (micro-batches of
  /// different shapes, summed by the caller), combined and ranged as step() combines its own.
  StepTime step_of(double host_s, double device_s) const;
  const StackModel& model() const { return m_; }

 private:
  Features at(int64_t micro_batch) const;

  StackModel m_;
  Precision precision_;
  Features unit_;  ///< features at micro-batch 1
  OptimizerTime optimizer_;
};

}  // namespace lorasim::model
