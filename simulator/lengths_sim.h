// The simulator for data of many lengths: every split of the effective batch, with the step
// time as a random variable of the micro-batches' padded lengths (a cost model per distinct
// padded length, seeded sampling of steps), the padding fraction, the epoch time, and the
// memory of the worst micro-batch the data can produce. docs/lengths.md says how.
#pragma once
#include <cstdint>
#include <vector>

#include "model/coefficients.h"
#include "model/cost_model.h"
#include "simulator/simulate.h"

namespace lorasim::sim {

struct LengthsOptions {
  /// HF's group_by_length: micro-batches of sequences of similar length (model/lengths.h).
  bool group_by_length = false;
  /// Seeded optimizer steps drawn per split; fewer (down to 64) where a split's steps hold many
  /// micro-batches, so that at most 100,000 sequences are drawn per split.
  int64_t sampled_steps = 2000;
  uint64_t seed = 0;             ///< the same seed gives the same figures
};

/// What a split adds over the fixed-length figures; Split::step_time_s is the mean step of a run
/// of Request::steps steps from a fresh process (steady steps plus new shapes).
struct LengthFigures {
  double step_time_p99_s = 0;            ///< the step that 99% of the sampled steps stay within
  double padding_fraction = 0;           ///< expected padded tokens that are padding
  double mean_padded_length_tokens = 0;  ///< expected row length of a micro-batch
  int64_t worst_padded_length_tokens = 0;  ///< row length of the worst micro-batch (b longest together)
  double activation_bytes = 0;           ///< the worst micro-batch's peak allocated less the static bytes
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
  /// The sampled steady steps, ascending: of one GPU, whose maximum over GPUs simulator/lengths_dp.h takes.
  std::vector<double> sampled_step_s;
};

struct LengthsResult {
  /// The splits as simulate() gives them, with step_time_s (and micro-batch, host and device
  /// times, run time, range) the means over sampled steps, tokens_per_s the real tokens, and the
  /// memory that of the worst micro-batch with the allocator's slack for varying shapes; ranked
  /// by epoch time among those whose worst micro-batch fits.
  Result result;
  std::vector<LengthFigures> lengths;  ///< parallel to result.splits
  int64_t rows_per_epoch = 0;          ///< sequences (packed: rows) in one pass over the data
};

/// Sets f's epoch range from its epoch_time_s and the split's step range.
void set_epoch_range(const Split& s, LengthFigures& f);

/// The share of a micro-batch's activation bytes (its peak allocated less the model's static
/// bytes) that PyTorch's caching allocator additionally holds when micro-batch shapes vary: the
/// profile's varying_share_* / varying_bound_* rows. `bound`: the share the worst case adds,
/// never below a measured peak of the rows it was fitted on; otherwise the share the expected
/// peak adds.
double varying_shape_share(const model::Coefficients& c, model::AllocatorMode allocator, bool bound);

/// A split's memory from its worst micro-batch (`worst`: its memory at its row length; `varying`:
/// whether the data's micro-batches take more than one shape): the allocated peak, the expected
/// and worst reserved with the allocator's hold for varying shapes (varying_shape_share), and
/// what it needs not to run out of memory (Split::needed_bytes). At the memory limit PyTorch's
/// default allocator frees its unused cached segments and retries before it fails, so a split of
/// varying shapes needs the allocated peak plus the profile's varying_need_default share of the
/// activations -- never less than the fixed-shape worst case, never more than the unbounded hold
/// (worst_reserved_bytes, which it is for expandable segments, one shape, or a share of 0).
void set_worst_micro_batch_memory(const model::Coefficients& c, model::AllocatorMode allocator,
                                  const model::MemoryEstimate& worst, double activations, bool varying, Split& s);

/// Ranks `out.result`'s splits by epoch time among those whose worst micro-batch fits (equal
/// times keep the larger accumulation, smaller memory, as simulate() does) and sets the
/// recommendation to the first.
void rank_by_epoch(LengthsResult& out);

/// `r.workload.train.lengths` is the data's distribution (truncated at its maximum length;
/// empty: the one-point distribution at seq_len), `train.padding` how micro-batches are padded.
/// Throws InputError for an invalid request or options (sampled steps < 1), as simulate().
/// Several GPUs (`gpus` > 1, `fsdp`): simulate_lengths_data_parallel (simulator/lengths_dp.h).
LengthsResult simulate_lengths(const Request& r, const LengthsOptions& options = {});

}  // namespace lorasim::sim
