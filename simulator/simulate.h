// The simulator: every micro-batch x accumulation split of an effective batch, each with
// predicted step time and peak memory, filtered by the memory limit, ranked, recommended.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/hardware.h"
#include "model/workload.h"
#include "simulator/measured_splits.h"

namespace lorasim::sim {

struct Request {
  model::Workload workload;
  model::HardwareModel hardware;
  int64_t effective_batch = 1;     ///< B = micro_batch x accumulation
  int64_t steps = 100;             ///< optimizer steps for the run-time column
  int64_t memory_limit_bytes = 0;  ///< 0: the device's memory
  double safety_margin = 0.05;     ///< fraction of the limit kept free for fragmentation and spikes
  /// Runs of splits of this workload on this GPU: their figures replace the prediction's
  /// (simulator/measured_splits.h).
  std::vector<MeasuredSplit> measured;
};

struct Split {
  int64_t micro_batch = 0;     ///< b, HF per_device_train_batch_size
  int64_t accumulation = 0;    ///< a, HF gradient_accumulation_steps
  double micro_batch_time_s = 0;
  double host_time_s = 0;      ///< host dispatch per micro-batch
  double device_time_s = 0;    ///< device execution per micro-batch
  double optimizer_time_s = 0;
  double step_time_s = 0;      ///< a micro-batches and the optimizer (docs/cost-model.md)
  double step_time_low_s = 0;  ///< the step time's range: host and device off by their spreads
  double step_time_high_s = 0;
  double run_time_s = 0;       ///< steps * step_time_s
  double tokens_per_s = 0;
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
  double worst_reserved_bytes = 0;  ///< reserved plus a fresh process's allocator slack (measured: its repeatability)
  bool fits = false;           ///< worst reserved + context within the usable memory
  bool measured = false;       ///< step time and peak are a run's (Request::measured), not predicted
  bool measured_oom = false;   ///< a run of it ran out of memory
  bool host_bound = false;     ///< host dispatch, not the device, sets the pace
  int rank = 0;                ///< 1 = fastest split that fits; 0 = does not fit
};

struct Result {
  std::vector<Split> splits;           ///< ascending micro-batch
  std::optional<size_t> recommended;   ///< index into splits of the fastest that fits
  double memory_limit_bytes = 0;       ///< the limit applied
  double usable_memory_bytes = 0;      ///< limit less margin and the device context
  std::vector<std::string> notes;      ///< caveats the user should see (prior profile, ...)
};

/// The largest effective batch simulate() accepts: enumerating the splits tries every b up to
/// sqrt(B) (a million here, milliseconds), and no single device takes a trillion sequences per
/// optimizer step.
inline constexpr int64_t kMaxEffectiveBatch = int64_t{1} << 40;

/// All b with b * a = B, ascending.
std::vector<int64_t> divisors(int64_t effective_batch);

/// Throws InputError for an invalid request (B < 1 or above kMaxEffectiveBatch, steps < 1, bf16
/// on a GPU without it, a memory limit that leaves nothing usable, a count beyond int64, ...).
Result simulate(const Request& request);

}  // namespace lorasim::sim
