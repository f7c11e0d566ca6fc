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
  double saved_bytes = 0;            ///< activations saved for backward
  double attention_score_bytes = 0;  ///< unfused attention scores
  double logits_bytes = 0;           ///< logits and loss buffers
  double static_bytes = 0;           ///< weights + adapters + gradients + optimizer state
};
Features features(const Workload& w, int64_t micro_batch);

struct MicroBatchTime {
  double host_s = 0;    ///< host dispatch time
  double device_s = 0;  ///< device execution time
  double total_s = 0;   ///< max or sum of the two, per the device's overlap
};

struct MemoryEstimate {
  double peak_allocated_bytes = 0;  ///< tensors alive at the peak
  double peak_reserved_bytes = 0;   ///< what the caching allocator holds from the device
};

/// Time and memory of one micro-batch from its features.
MicroBatchTime micro_batch_time(const Features& f, const HardwareModel& hw, Precision p);
/// Operators a micro-batch adds when it accumulates into existing gradients (every one
/// after the first of a step: one in-place add per adapter tensor).
double accumulation_ops(int64_t lora_tensors);
MemoryEstimate peak_memory(const Features& f, const HardwareModel& hw);
/// One AdamW step over the adapters plus zeroing their gradients.
double optimizer_time(int64_t trainable_params, int64_t lora_tensors, const HardwareModel& hw);

class CostModel {
 public:
  CostModel(const Workload& w, const HardwareModel& hw);

  /// One micro-batch; `accumulating`: not the first of its step, so it adds into gradients.
  MicroBatchTime micro_batch(int64_t micro_batch, bool accumulating = false) const;
  double optimizer_step_s() const { return optimizer_s_; }
  /// T(b, a) = t_micro(b) + (a - 1) * t_micro_accumulating(b) + t_optimizer.
  double step_time_s(int64_t micro_batch, int64_t accumulation) const;
  MemoryEstimate memory(int64_t micro_batch) const;

 private:
  Features at(int64_t micro_batch) const;

  HardwareModel hw_;
  Precision precision_;
  Features unit_;  ///< features at micro-batch 1
  double optimizer_s_ = 0;
  double accumulation_ops_ = 0;
};

}  // namespace lorasim::model
