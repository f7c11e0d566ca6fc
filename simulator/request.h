// What the simulator is asked: a workload on a device, an effective batch to split, the GPUs it
// runs on, and runs of it already measured. Plain values; every stage of the pipeline reads them.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::sim {

/// The largest effective batch the simulator accepts: enumerating the splits tries every b up to
/// sqrt(B) (a million here, milliseconds), and no single device takes a trillion sequences per
/// optimizer step.
inline constexpr int64_t kMaxEffectiveBatch = int64_t{1} << 40;

/// One measured run of a split of the simulated workload and effective batch.
struct MeasuredSplit {
  int64_t micro_batch = 0;
  int64_t accumulation = 0;
  bool oom = false;                               ///< it ran out of memory: the split does not fit
  double step_time_s = 0;                         ///< measured seconds per optimizer step (unless oom)
  std::optional<double> peak_reserved_bytes;      ///< the caching allocator's peak, when recorded
  std::optional<double> peak_allocated_bytes;
  bool grad_ckpt = false;  ///< measured with gradient checkpointing: it stands for that setting's split only
};

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

/// How data of many lengths is sampled (simulator/lengths_sim.h).
struct LengthsOptions {
  /// HF's group_by_length: micro-batches of sequences of similar length (model/lengths.h).
  bool group_by_length = false;
  /// Seeded optimizer steps drawn per split; fewer (down to 64) where a split's steps hold many
  /// micro-batches, so that at most 100,000 sequences are drawn per split.
  int64_t sampled_steps = 2000;
  uint64_t seed = 0;             ///< the same seed gives the same figures
};

}  // namespace lorasim::sim
