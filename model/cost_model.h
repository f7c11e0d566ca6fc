// The cost model: a workload and a device's coefficients in, micro-batch time, step time
// and peak memory out. Construction does the per-workload work once; each prediction is a
// handful of multiply-adds, so the simulator can sweep every split cheaply.
#pragma once
#include <cstdint>

#include "model/coefficients.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::model {

/// The regressors of one micro-batch of `w` (model/coefficients.h).
Features features(const Workload& w, int64_t micro_batch);

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
  /// (HardwareModel::host_spread, device_spread) in the same direction.
  double low_s = 0;
  double high_s = 0;
  bool host_bound = false; ///< host dispatch sets the pace
};

struct MemoryEstimate {
  double peak_allocated_bytes = 0;  ///< tensors alive at the peak
  double peak_reserved_bytes = 0;   ///< what the caching allocator holds from the device
  /// Reserved plus the slack a fresh process sometimes shows: the caching allocator keeps
  /// one logits-sized block it cannot reuse (docs/cost-model.md, "Worst case"). What the
  /// simulator checks against the memory limit.
  double worst_reserved_bytes = 0;
};

/// The factor on FLOP rates for a workload in `p` when the rates were fitted in another
/// precision: the datasheet peak ratio (1 when either peak is unknown).
double rate_scale(const HardwareModel& hw, Precision p);
/// Device time of the LM head and the loss over the vocabulary (part of micro_batch_time's).
double head_device_s(const Features& f, const HardwareModel& hw, double rate_scale = 1.0);
/// Time of one micro-batch from its features.
MicroBatchTime micro_batch_time(const Features& f, const HardwareModel& hw, Precision p);
MemoryEstimate peak_memory(const Features& f, const HardwareModel& hw);
/// The optimizer of a workload with these features (its adapter tensors and parameters).
OptimizerTime optimizer_time(const Features& f, const HardwareModel& hw);

class CostModel {
 public:
  CostModel(const Workload& w, const HardwareModel& hw);

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

 private:
  Features at(int64_t micro_batch) const;

  HardwareModel hw_;
  Precision precision_;
  Features unit_;  ///< features at micro-batch 1
  OptimizerTime optimizer_;
};

}  // namespace lorasim::model
