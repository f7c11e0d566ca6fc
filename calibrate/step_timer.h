// Times the phases of one optimizer step (private to calibrate/). On CUDA, events give the
// GPU's view: a phase ends when its last kernel ends, and the micro-batches run back to back
// without a host sync, so their mean is the steady-state time max(host, device). On the CPU,
// which executes each operator as it is dispatched, the wall clock times every micro-batch.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace lorasim::calib {

struct StepTiming {
  double step_s = 0;                  ///< the whole step: micro-batches, AdamW, zero_grad
  std::vector<double> micro_batch_s;  ///< CPU: each micro-batch; CUDA: one mean over the step
  double optimizer_s = 0;             ///< AdamW step + zero_grad
  double loss = 0;                    ///< sum over micro-batches of CE / accumulation
};

/// One timer per step, chosen once for the device: start(), micro_batch_done() after each
/// micro-batch, micro_batches_done() before the optimizer, step_done() after it, then timing().
class StepTimer {
 public:
  /// `cuda`: time with CUDA events on device `device_index` (needs a CUDA build).
  StepTimer(bool cuda, int64_t device_index);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  void start();               ///< CUDA: waits for earlier work, so the step is timed alone
  void micro_batch_done();
  void micro_batches_done();  ///< the last micro-batch's backward is queued
  void step_done();           ///< CUDA: waits for the step to finish
  /// The phases of the step (loss left 0): `accumulation` micro-batches were run.
  StepTiming timing(int64_t accumulation) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct CudaEvents;
  std::unique_ptr<CudaEvents> events_;  // null: the wall clock
  int64_t device_index_ = 0;
  Clock::time_point step_start_, last_mark_, backward_done_, step_end_;
  std::vector<double> micro_batch_s_;
};

}  // namespace lorasim::calib
