// The calibration runner's public API: a Trainer owns one LoRA model on one device and
// runs real training steps (micro-batches with gradient accumulation, then AdamW), measuring
// step time, per-micro-batch time (host dispatch vs device execution on CUDA) and peak memory.
// No torch types here: the CLI includes this without LibTorch's headers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/device.h"
#include "calibrate/measured_run.h"
#include "calibrate/process_group.h"
#include "model/error.h"
#include "model/workload.h"

namespace lorasim::calib {

/// A run stopped by RunSpec::should_stop; the trainer stays usable.
class RunInterrupted : public CalibrationError {
 public:
  using CalibrationError::CalibrationError;
};

struct RunSpec {
  model::Workload workload;          ///< arch may be truncated (model::truncated)
  int64_t micro_batch = 1;           ///< sequences per forward/backward
  int64_t accumulation = 1;          ///< micro-batches per optimizer step
  int warmup_steps = 1;              ///< full optimizer steps before measuring
  int measure_steps = 3;             ///< timed optimizer steps (median reported)
  int64_t memory_limit_bytes = 0;    ///< 0 = the device's own; >0 forces OOM above it
  /// CUDA: also measure host dispatch vs device time (a few extra micro-batches behind a
  /// sleep kernel). Opt-in: on a deep model the launch queue fills and the measurement is
  /// given up after costing about ten micro-batches.
  bool split_host_device = false;
  /// Polled before every micro-batch (warm-up included): when it returns true the run stops
  /// and throws RunInterrupted. An interrupt then waits for one micro-batch at most.
  std::function<bool()> should_stop;
  /// Data of many lengths: with workload.train.lengths set, every micro-batch's sequences are
  /// drawn from them (calibrate/length_sampler.h, seeded by this) and right-padded to the
  /// collation's width (workload.train.padding: longest, multiple:N or max_length) with labels
  /// -100 on the pads; causal attention keeps right pads out of every real token's view.
  uint64_t data_seed = 0;
};

/// Owns one model on one device; reusable across many runs (building a model is expensive).
/// Runs must keep the trainer's workload except for the sequence length.
class Trainer {
 public:
  /// Builds the model of `w` with random frozen weights (seeded) on the device named by
  /// `device_spec` (see resolve_device), in the precision resolve_precision gives for `w`'s
  /// on that device (workload() and every RunResult say which). Throws InputError for a bad
  /// workload or device, or a model whose weights and optimizer state alone exceed the
  /// machine's available memory (the GPU's on CUDA).
  Trainer(const model::Workload& w, const std::string& device_spec, uint64_t seed = 0);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Runs warm-up and measured optimizer steps. An out-of-memory is returned as
  /// RunResult::oom with everything released, and so is, before anything is allocated, a split
  /// whose least memory (calibrate/run_checks.h) exceeds what the machine has; other failures
  /// throw CalibrationError, and a spec that does not fit this trainer or whose counts are out
  /// of bounds throws InputError.
  RunResult run(const RunSpec& spec);

  const DeviceInfo& device() const;
  const model::Workload& workload() const;

  /// Makes this trainer one rank of data-parallel training over `group` (which must outlive it):
  /// each micro-batch of every later run is this rank's `micro_batch` rows of one draw of
  /// micro_batch x ranks sequences, the adapters' gradients are averaged over the ranks once per
  /// optimizer step (after the last micro-batch, as DDP under no_sync), and the reported losses
  /// are the ranks' mean. Every rank must build its trainer with the same workload and seed (the
  /// same starting weights) and run the same specs. Data of many lengths is refused (InputError):
  /// the ranks would pad their shares apart.
  void join(ProcessGroup& group);

  // ---- Test hooks (tests/calibrate); calibration does not need them. ----

  /// Training data: uniform random tokens (default, what calibration measures) or a
  /// learnable pattern token[t+1] = (token[t] + 1) % 8 from a random start.
  enum class Data { random, learnable };
  void set_data(Data data);
  /// AdamW learning rate (default 1e-4; values do not affect time or memory).
  void set_learning_rate(double lr);
  /// Gives every LoRA B a random value (PEFT starts it at zero, which makes A's gradient zero).
  void randomize_adapters(uint64_t seed);
  /// Forward + backward over one batch of micro_batch * accumulation sequences drawn from
  /// `data_seed`, split HF-style into `accumulation` micro-batches (loss / a each), without
  /// an optimizer step. Returns every adapter gradient flattened, in parameter order, then
  /// clears the gradients. Joined to N ranks (join): this rank's micro_batch rows of each
  /// micro-batch of micro_batch x N, the gradients averaged over the ranks.
  std::vector<float> accumulated_gradients(int64_t micro_batch, int64_t accumulation,
                                           int64_t seq_len, uint64_t data_seed);
  /// Every adapter parameter flattened, in parameter order, as fp32.
  std::vector<float> adapter_weights() const;
  /// Copies every frozen base tensor; base_weights_unchanged() compares against the copy
  /// bit for bit (torch::equal).
  void snapshot_base_weights();
  bool base_weights_unchanged() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lorasim::calib
