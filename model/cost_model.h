// The cost model: a workload and a device's coefficients in, micro-batch time, step time
// and peak memory out. Construction does the per-workload work once; each prediction is a
// handful of multiply-adds, so the simulator can sweep every split cheaply.
#pragma once
#include <cstdint>

#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::model {

/// Regressors of one micro-batch: the analytic quantities the coefficients multiply.
/// All but host_ops grow linearly with the micro-batch at a fixed sequence length.
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
};
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
  bool host_bound = false; ///< host dispatch sets the pace
};

struct MemoryEstimate {
  double peak_allocated_bytes = 0;  ///< tensors alive at the peak
  double peak_reserved_bytes = 0;   ///< what the caching allocator holds from the device
  /// Reserved plus the slack a fresh process sometimes shows: the caching allocator keeps
  /// one logits-sized block it cannot reuse (an H200 showed it in the first run of 4 of 17
  /// processes, never in a later one: bench/results/h200/README.md). What the simulator
  /// checks against the memory limit.
  double worst_reserved_bytes = 0;
};

/// Time of one micro-batch from its features.
MicroBatchTime micro_batch_time(const Features& f, const HardwareModel& hw, Precision p);
MemoryEstimate peak_memory(const Features& f, const HardwareModel& hw);
/// With gradient checkpointing, whether the rebuilt block (with its scores), not the loss's
/// buffers, sets the allocated peak; false without checkpointing.
bool rebuilt_block_sets_peak(const Features& f, const MemoryCoefficients& m);
OptimizerTime optimizer_time(int64_t trainable_params, int64_t lora_tensors, const HardwareModel& hw);
/// Operators a micro-batch adds when it accumulates into existing gradients (every one
/// after the first of a step: one in-place add per adapter tensor).
double accumulation_ops(int64_t lora_tensors);
/// The share of overlap_loss that applies to a micro-batch of `host_ops` operators: 0 while
/// the whole micro-batch fits in the launch queue, approaching 1 for very long ones.
double overlap_share(double host_ops, const TimeCoefficients& c);
/// Combines host and device time the way the device overlaps them.
double combine(double host_s, double device_s, double host_ops, const HardwareModel& hw);

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

 private:
  Features at(int64_t micro_batch) const;

  HardwareModel hw_;
  Precision precision_;
  Features unit_;  ///< features at micro-batch 1
  OptimizerTime optimizer_;
  double accumulation_ops_ = 0;
};

}  // namespace lorasim::model
