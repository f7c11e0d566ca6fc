// What the simulator answers: every split with its figures, the limit it was held to, the
// recommendation, and its notes as typed values (simulator/note_text.h writes them out).
// Plain values; nothing here computes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/hardware.h"

namespace lorasim::sim {

struct Split {
  int64_t micro_batch = 0;     ///< b, HF per_device_train_batch_size
  int64_t accumulation = 0;    ///< a, HF gradient_accumulation_steps
  int64_t gpus = 1;            ///< data-parallel GPUs, each running a micro-batches of b
  double allreduce_time_s = 0;     ///< the gradients' ring all-reduce per step (0 on one GPU)
  double allreduce_exposed_s = 0;  ///< the part of it the last backward does not hide, in step_time_s
  double fsdp_comm_time_s = 0;     ///< --fsdp: the all-gathers and the reduce-scatter of a step
  double fsdp_exposed_s = 0;       ///< --fsdp: the part of them compute does not hide, in step_time_s
  bool fsdp = false;               ///< FSDP FULL_SHARD (Request::fsdp)
  bool grad_ckpt = false;      ///< with gradient checkpointing (the workload's, or each setting's under both)
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

/// What a split of data of many lengths adds over the fixed-length figures; Split::step_time_s is
/// the mean step of a run of Request::steps steps from a fresh process (steady steps plus new shapes).
struct LengthFigures {
  double step_time_p99_s = 0;            ///< the step that 99% of the sampled steps stay within
  double padding_fraction = 0;           ///< expected padded tokens that are padding
  double mean_padded_length_tokens = 0;  ///< expected row length of a micro-batch
  int64_t worst_padded_length_tokens = 0;  ///< row length of the worst micro-batch (b longest together)
  double activation_bytes = 0;           ///< the worst micro-batch's peak allocated less the static bytes
  double worst_width_reach = 0;          ///< how often a micro-batch has the worst one's width (1: one shape)
  double varying_need_share = 0;         ///< varying_need_share at the worst width's reach (default allocator, shapes vary)
  double varying_shape_bytes = 0;        ///< what peak reserved adds for varying shapes (varying_shape_share)
  double varying_shape_worst_bytes = 0;  ///< what worst reserved adds for them
  int64_t steps_per_epoch = 0;           ///< ceil(rows of one pass / effective batch)
  /// The first epoch from a fresh process: steps_per_epoch steady steps, each new shape's cost and
  /// the process's first-step set-up (first_step_s).
  double epoch_time_s = 0;
  /// The range of epoch_time_s one process's epoch falls in: each step's range (step_time_low_s,
  /// step_time_high_s: the profile's expected time error), which one process's steps share; the
  /// high end also holds cold_start_s, for the first run on a machine.
  double epoch_time_low_s = 0, epoch_time_high_s = 0;
  double new_shapes_per_step = 0;        ///< micro-batches per step of a shape new to the run (its mean)
  double new_shape_time_s = 0;           ///< what they add to the mean step (new_shape_s each)
  double new_shapes_per_epoch = 0;       ///< micro-batches of the first epoch of a shape new to it
  double first_step_s = 0;               ///< what a fresh process's first step adds (model::process_first_step_s)
  double cold_start_s = 0;               ///< what the first process on a machine adds: in epoch_time_high_s only
  /// The sampled steady steps of one GPU, ascending (the slowest of several GPUs is taken over them).
  std::vector<double> sampled_step_s;
};

/// What data parallelism adds to a split on each GPU, alike for every split.
struct DataParallelCost {
  int64_t gpus = 1;
  int64_t gradient_bytes = 0;       ///< trainable parameters x kAdapterGradientBytes
  int64_t buckets = 0;
  double allreduce_time_s = 0;      ///< the ring all-reduce of every bucket
  double allreduce_exposed_s = 0;   ///< what the step waits for beyond the last backward
  double bucket_memory_bytes = 0;   ///< DDP's buckets: a copy of the gradients on each GPU
};

/// Per GPU, the static bytes under FSDP FULL_SHARD against the replicated ones (simulator/fsdp.h).
struct FsdpMemory {
  double sharded_weights_bytes = 0;   ///< every frozen weight / N
  double root_unit_bytes = 0;         ///< embeddings, LM head, final norm: the root unit, gathered for the whole step
  double layers_in_flight_bytes = 0;  ///< kFsdpLayersInFlight layers' full frozen weights and adapters
  double adapter_state_bytes = 0;     ///< adapters, their gradients and optimizer state / N
  /// What a GPU's memory changes by against one GPU holding everything (negative: a saving).
  double delta_bytes = 0;
};

/// What a note says; its numbers (Note::values) are listed per kind. simulator/note_text.h writes
/// the sentence, from the note, the request and the result.
enum class NoteKind {
  measured,                ///< {splits measured, the allocator's bytes (limit less context)}
  data_parallel,           ///< {} what was all-reduced or sharded, over which link
  prior_profile,           ///< {expected time error, expected memory error, whether the range says so}
  no_bf16,                 ///< {} fp16 assumed
  stack_prior,             ///< {the stack's expected time error}: the stack's own sentence
  stack_memory,            ///< {the prior's memory error, the stack's expected memory error}
  family_memory,           ///< {the family's memory error}
  precision_scaled,        ///< {} rates fitted in another precision
  varying_shapes,          ///< {expected share, worst-case share} of the allocator's hold
  slowest_gpu,             ///< {1 if every step is exact, else 0}
  recommended_host_bound,  ///< {}
  stack_host_bound,        ///< {host spread}: the stack's own sentence
  no_split_fits,           ///< {usable bytes}
  no_worst_micro_batch_fits,  ///< {}
  fsdp_would_fit,          ///< {micro-batch, accumulation, worst reserved bytes per GPU}
};

struct Note {
  NoteKind kind;
  std::vector<double> values;
  bool operator==(const Note& o) const { return kind == o.kind && values == o.values; }
};

/// The recommended split under another way of forming its micro-batches, or (flag "--allocator
/// expandable") the split recommended under expandable segments.
struct PaddingAlternative {
  std::string flag;           ///< "--padding packed", "--group-by-length" or "--allocator expandable"
  std::string env;            ///< what the trainer's environment then needs, if anything
  int64_t micro_batch = 0;    ///< the split it times
  int64_t accumulation = 0;
  bool grad_ckpt = false;
  double epoch_time_s = 0;
  double padding_fraction = 0;
  bool fits = false;          ///< its worst micro-batch fits
  double saving = 0;          ///< 1 - epoch_time_s / the recommended split's epoch time
  /// --allocator expandable: what the split needs under the default allocator (0: not simulated).
  double refused_needed_bytes = 0;
};

struct PaddingAdvice {
  std::optional<size_t> next_best;            ///< index into the splits of rank 2, if any
  std::vector<PaddingAlternative> faster;     ///< the alternatives at least 1% faster per epoch
};

struct Result {
  std::vector<Split> splits;           ///< ascending micro-batch (under both checkpointing settings: off, then on)
  std::optional<size_t> recommended;   ///< index into splits of the fastest that fits
  double memory_limit_bytes = 0;       ///< the limit applied
  double usable_memory_bytes = 0;      ///< limit less margin and the device context
  std::vector<Note> notes;             ///< caveats the user should see (prior profile, ...), in the order written
  DataParallelCost data_parallel;      ///< what --gpus adds, alike for every split (every figure 0 on one GPU)
  model::Interconnect interconnect;    ///< the link data_parallel was priced on (gpus > 1)
  bool fsdp = false;                   ///< the request's --fsdp
  FsdpMemory fsdp_memory;              ///< what --fsdp changes in every split's memory (all 0 without)
};

struct LengthsResult {
  /// The splits, with step_time_s (and micro-batch, host and device times, run time, range) the
  /// means over sampled steps, tokens_per_s the real tokens, and the memory that of the worst
  /// micro-batch with the allocator's slack for varying shapes; ranked by epoch time among those
  /// whose worst micro-batch fits.
  Result result;
  std::vector<LengthFigures> lengths;  ///< parallel to result.splits
  int64_t rows_per_epoch = 0;          ///< sequences (packed: rows) in one pass over the data
  PaddingAdvice advice;                ///< where Plan::advice asked for it (simulator/padding_advice.h)
};

}  // namespace lorasim::sim
