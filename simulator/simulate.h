// The simulator: every micro-batch x accumulation split of an effective batch, each with
// predicted step time and peak memory, filtered by the memory limit, ranked, recommended.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/hardware.h"
#include "model/workload.h"
#include "simulator/data_parallel.h"
#include "simulator/fsdp.h"
#include "simulator/measured_splits.h"

namespace lorasim::sim {

struct Request {
  model::Workload workload;
  model::HardwareModel hardware;
  int64_t effective_batch = 1;     ///< B = micro_batch x accumulation x gpus
  /// GPUs of one host training data-parallel (DDP), each on B / gpus sequences per step.
  int64_t gpus = 1;
  /// The link the GPUs all-reduce over; empty: the profile's [interconnect] (simulator/data_parallel.h).
  std::optional<model::Link> link;
  /// FSDP FULL_SHARD instead of DDP: the frozen weights sharded across the GPUs (simulator/fsdp.h).
  bool fsdp = false;
  int64_t steps = 100;             ///< optimizer steps for the run-time column
  int64_t memory_limit_bytes = 0;  ///< 0: the device's memory
  /// Fraction of the limit kept free for other processes on the GPU. 0 by default: the worst case
  /// already holds what a peak was measured to exceed its count by (docs/cost-model.md, "Worst case").
  double safety_margin = 0.0;
  /// Runs of splits of this workload on this GPU: their figures replace the prediction's
  /// (simulator/measured_splits.h).
  std::vector<MeasuredSplit> measured;
};

struct Split {
  int64_t micro_batch = 0;     ///< b, HF per_device_train_batch_size
  int64_t accumulation = 0;    ///< a, HF gradient_accumulation_steps
  int64_t gpus = 1;            ///< data-parallel GPUs, each running a micro-batches of b
  double allreduce_time_s = 0;     ///< the gradients' ring all-reduce per step (0 on one GPU)
  double allreduce_exposed_s = 0;  ///< the part of it the last backward does not hide, in step_time_s
  double fsdp_comm_time_s = 0;     ///< --fsdp: the all-gathers and the reduce-scatter of a step
  double fsdp_exposed_s = 0;       ///< --fsdp: the part of them compute does not hide, in step_time_s
  bool fsdp = false;               ///< FSDP FULL_SHARD (Request::fsdp)
  bool grad_ckpt = false;      ///< with gradient checkpointing (the workload's; simulate_both_grad_ckpt mixes both)
  double micro_batch_time_s = 0;
  double host_time_s = 0;      ///< host dispatch per micro-batch
  double device_time_s = 0;    ///< device execution per micro-batch
  double optimizer_time_s = 0;
  double step_time_s = 0;      ///< a micro-batches and the optimizer (docs/cost-model.md)
  double step_time_low_s = 0;  ///< the step time's range: host and device off by their spreads
  double step_time_high_s = 0;
  double run_time_s = 0;       ///< steps * step_time_s
  double tokens_per_s = 0;
  double peak_allocated_bytes = 0;  ///< per GPU, as the two below
  double peak_reserved_bytes = 0;
  double worst_reserved_bytes = 0;  ///< reserved plus a fresh process's allocator slack (measured: its repeatability)
  /// What the split needs not to run out of memory on a GPU of that usable memory: the worst
  /// reserved, or less where the allocator gives memory back at the limit (data of many lengths
  /// under the default allocator, simulator/lengths_sim.h).
  double needed_bytes = 0;
  bool fits = false;           ///< needed_bytes within the usable memory
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
  DataParallelCost data_parallel;      ///< what --gpus adds (every figure 0 on one GPU)
  model::Interconnect interconnect;    ///< the link data_parallel was priced on (gpus > 1)
  bool fsdp = false;                   ///< the request's --fsdp
  FsdpMemory fsdp_memory;              ///< what --fsdp changes in every split's memory (all 0 without)
};

/// The largest effective batch simulate() accepts: enumerating the splits tries every b up to
/// sqrt(B) (a million here, milliseconds), and no single device takes a trillion sequences per
/// optimizer step.
inline constexpr int64_t kMaxEffectiveBatch = int64_t{1} << 40;

/// All b with b * a = B, ascending (with gpus > 1: of B / gpus).
std::vector<int64_t> divisors(int64_t effective_batch);

/// Adds data parallelism's exposed all-reduce to `s`'s step times (and its run time and tokens/s
/// over `tokens_per_step` of every GPU) and DDP's gradient buckets to its memory.
void add_data_parallel(const DataParallelCost& dp, int64_t steps, double tokens_per_step, Split& s);

/// Adds FSDP's exposed collectives `step` to `s`'s step times (its run time and tokens/s over
/// `tokens_per_step` of every GPU) and `m.delta_bytes` to its memory.
void add_fsdp(const FsdpMicroBatch& step, const FsdpMemory& m, int64_t steps, double tokens_per_step, Split& s);

/// The note a data-parallel result carries: what was all-reduced (DDP) or sharded (FSDP), over
/// which link, and where the link's figures came from.
std::string data_parallel_note(const Result& r, const model::HardwareModel& hw);

/// "no split fits with the frozen weights replicated ...; with --fsdp ... fits": what recommend
/// says when FSDP's split `s` fits where no replicated one does.
std::string fsdp_would_fit_note(const Split& s, int64_t gpus);

/// Throws InputError for an invalid request (B < 1 or above kMaxEffectiveBatch, steps < 1, bf16
/// on a GPU without it, a memory limit that leaves nothing usable, a count beyond int64, ...).
Result simulate(const Request& request);

}  // namespace lorasim::sim
