// What a training run must satisfy before the runner allocates anything: the trainer's model,
// counts a run can take, and memory the machine has. An estimate first, because past it a CPU
// run is not refused by an allocator but killed by the kernel, with no message. Torch-free.
#pragma once
#include <cstdint>
#include <string>

#include "calibrate/device.h"
#include "model/workload.h"

namespace lorasim::calib {

/// The most sequences of one micro-batch, and micro-batches of one step, a run takes.
inline constexpr int64_t kMaxRunMicroBatch = int64_t{1} << 20;
inline constexpr int64_t kMaxRunAccumulation = int64_t{1} << 20;

/// Throws InputError unless `built` (the trainer's workload, in the precision it runs) and
/// `asked` are the same model: a run may change only the sequence length.
void check_same_model(const model::Workload& built, const model::Workload& asked, const DeviceInfo& device);

/// Throws InputError, naming the quantity, when a micro-batch, an accumulation count or the
/// tokens of a step are out of bounds (below 1, above the bounds above, or beyond int64).
void check_run_counts(int64_t micro_batch, int64_t accumulation, int64_t seq_len);

/// What a run must hold at least, in bytes: less than it will use, so that a run refused for
/// it could never have fitted.
struct RunMemory {
  double static_bytes = 0;      ///< frozen weights, adapters, their gradients and AdamW's moments
  double activation_bytes = 0;  ///< one micro-batch's saved tensors and one logits tensor
  double token_bytes = 0;       ///< the step's token ids (all its micro-batches are drawn first)
  double device_bytes() const { return static_bytes + activation_bytes + token_bytes; }
  /// On CUDA the host holds one micro-batch's ids on their way to the device; on the CPU the
  /// host is the device.
  double host_bytes(bool is_cuda, int64_t accumulation) const {
    return is_cuda ? 2 * token_bytes / static_cast<double>(accumulation) : device_bytes();
  }
};
RunMemory least_run_memory(const model::Workload& w, int64_t micro_batch, int64_t accumulation);

/// MemAvailable of a /proc/meminfo-format file, in bytes; -1 when it cannot be read.
int64_t available_host_bytes(const std::string& meminfo = "/proc/meminfo");

/// Why a run of `w` cannot fit on `device`, or "": host memory against `host_available_bytes`
/// (-1: unknown, not checked) and, on CUDA, device memory against the GPU's. A run's own memory
/// limit is not checked here: the meter enforces it as an out-of-memory the runner catches.
std::string run_memory_shortfall(const model::Workload& w, int64_t micro_batch, int64_t accumulation,
                                 const DeviceInfo& device, int64_t host_available_bytes);

/// Why building the model of `w` on `device` cannot fit (its weights, adapters and optimizer
/// state alone), or "".
std::string model_memory_shortfall(const model::Workload& w, const DeviceInfo& device, int64_t host_available_bytes);

}  // namespace lorasim::calib
