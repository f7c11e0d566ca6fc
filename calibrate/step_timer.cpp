// CUDA events or the wall clock behind StepTimer (see step_timer.h).
#include "calibrate/step_timer.h"

#ifdef LORASIM_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <torch/cuda.h>
#endif

#include "model/error.h"

namespace lorasim::calib {

namespace {
double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

#ifdef LORASIM_TORCH_CUDA
struct StepTimer::CudaEvents {
  at::cuda::CUDAEvent start{cudaEventDefault}, backward_done{cudaEventDefault}, end{cudaEventDefault};
};
#else
struct StepTimer::CudaEvents {};
#endif

StepTimer::StepTimer(bool cuda, int64_t device_index) : device_index_(device_index) {
  if (!cuda) return;
#ifdef LORASIM_TORCH_CUDA
  events_ = std::make_unique<CudaEvents>();
#else
  throw CalibrationError("CUDA timing asked of a build without CUDA");
#endif
}

StepTimer::~StepTimer() = default;

void StepTimer::start() {
#ifdef LORASIM_TORCH_CUDA
  if (events_) {
    torch::cuda::synchronize(device_index_);
    events_->start.record();
    return;
  }
#endif
  step_start_ = last_mark_ = Clock::now();
}

void StepTimer::micro_batch_done() {
  if (events_) return;  // an event per micro-batch would time each one's kernels, not the steady state
  const auto now = Clock::now();
  micro_batch_s_.push_back(seconds_between(last_mark_, now));
  last_mark_ = now;
}

void StepTimer::micro_batches_done() {
#ifdef LORASIM_TORCH_CUDA
  if (events_) {
    events_->backward_done.record();
    return;
  }
#endif
  backward_done_ = Clock::now();
}

void StepTimer::step_done() {
#ifdef LORASIM_TORCH_CUDA
  if (events_) {
    events_->end.record();
    events_->end.synchronize();
    return;
  }
#endif
  step_end_ = Clock::now();
}

StepTiming StepTimer::timing(int64_t accumulation) const {
  StepTiming t;
#ifdef LORASIM_TORCH_CUDA
  if (events_) {
    // elapsed_time is in milliseconds.
    t.step_s = events_->start.elapsed_time(events_->end) / 1e3;
    t.micro_batch_s.push_back(events_->start.elapsed_time(events_->backward_done) / 1e3 /
                              static_cast<double>(accumulation));
    t.optimizer_s = events_->backward_done.elapsed_time(events_->end) / 1e3;
    return t;
  }
#endif
  (void)accumulation;
  t.step_s = seconds_between(step_start_, step_end_);
  t.micro_batch_s = micro_batch_s_;
  t.optimizer_s = seconds_between(backward_done_, step_end_);
  return t;
}

}  // namespace lorasim::calib
