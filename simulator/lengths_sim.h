// The step source of data of many lengths: one GPU's step as a random variable of the
// micro-batches' padded widths (the cost model's step of each width, seeded sampling of steps
// whose cost does not grow with the data's size or counts), the padding fraction, new shapes, and
// the memory of the worst micro-batch the data can produce. docs/lengths.md says how.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <tuple>

#include "model/coefficients.h"
#include "model/cost_model.h"
#include "model/epoch_shapes.h"
#include "model/lengths.h"
#include "simulator/padded_cost.h"
#include "simulator/request.h"
#include "simulator/result.h"
#include "simulator/gpu_step.h"

namespace lorasim::sim {

/// Sets f's epoch range from its epoch_time_s and the split's step range.
void set_epoch_range(const Split& s, LengthFigures& f);

/// The share of a micro-batch's activation bytes (its peak allocated less the model's static
/// bytes) that PyTorch's caching allocator additionally holds when micro-batch shapes vary: the
/// profile's varying_share_* / varying_bound_* rows. `bound`: the share the worst case adds,
/// never below a measured peak of the rows it was fitted on; otherwise the share the expected
/// peak adds.
double varying_shape_share(const model::Coefficients& c, model::AllocatorMode allocator, bool bound);

/// How a split's micro-batch shapes vary: at all, and how often a micro-batch has the worst
/// one's width (model::worst_width_reach, or the share of a run's recorded widths).
struct ShapeVariation {
  bool varying = false;
  double worst_width_reach = 0;
};

/// The share of the worst micro-batch's activations that PyTorch's default allocator needs at
/// the memory limit beyond its allocated peak: varying_need_default, or for a checkpointed
/// workload the line from it down to varying_need_recurring as the worst width recurs.
double varying_need_share(const model::Coefficients& c, const model::Workload& w, double worst_width_reach);

/// A split's memory from its worst micro-batch (`worst`: its memory at its row length): the
/// allocated peak, the expected and worst reserved with the allocator's hold for varying shapes
/// (varying_shape_share), and what it needs not to run out of memory (Split::needed_bytes). At
/// the memory limit PyTorch's default allocator frees its unused cached segments and retries
/// before it fails, so a split of varying shapes needs the allocated peak plus
/// varying_need_share of the activations -- never less than the fixed-shape worst case, never
/// more than the unbounded hold (worst_reserved_bytes, which it is for expandable segments, one
/// shape, or a share of 0). Shapes that vary are one of the options whose counts missed more:
/// their worst case adds the stack's worst_case_margin_options where `w`'s own options did not.
void set_worst_micro_batch_memory(const model::Coefficients& c, const model::Workload& w, model::AllocatorMode allocator,
                                  const model::MemoryEstimate& worst, double activations, const ShapeVariation& shapes,
                                  Split& s);

/// Whether micro-batches of `d` padded by `p` can take more than one shape.
bool shapes_vary(const model::LengthDistribution& d, const model::Padding& p);

/// One GPU's steps of every split of one workload (one checkpointing setting) over data of many
/// lengths: `r.workload.train.lengths` (truncated at its maximum; empty: the one-point
/// distribution at seq_len) padded as `train.padding`; `r.effective_batch` and `r.gpus` are every
/// GPU's. The splits draw from one generator in the order they are asked for, so a split's draws
/// follow from the seed and the splits before it (skip_draws skips those of a split not asked).
/// later_shapes by (b, micro-batches, independent draws), and the seeded shuffles of the data
/// behind them: alike for every checkpointing setting of one data set, padding and sampling, so
/// the settings share them.
struct ShapeCounts {
  std::map<std::tuple<int64_t, int64_t, bool>, double> by_run;
  std::optional<model::EpochShapes> epochs;  ///< made by the first run that draws the data's order
};

class LengthsSource {
 public:
  /// `shapes` is shared by the sources of one data set, padding and options; it outlives this.
  LengthsSource(const Request& r, const LengthsOptions& o, ShapeCounts& shapes);

  /// The split b x a of one GPU; draws from `rng`.
  GpuStep step(int64_t b, int64_t a, std::mt19937_64& rng);
  /// Advances `rng` past the draws step(b, a) makes.
  void skip_draws(int64_t b, int64_t a, std::mt19937_64& rng) const;

  const model::Coefficients& coefficients() { return costs_.at(1).model().c; }
  const model::StackModel& stack_model() { return costs_.at(1).model(); }
  bool varying() const { return varying_; }
  int64_t rows_per_epoch() const { return rows_per_epoch_; }

 private:
  struct SampleSize {
    int64_t drawn = 0;  ///< micro-batches drawn per sampled step
    int64_t steps = 0;  ///< sampled steps
    int64_t per_micro_batch = 0;  ///< generator draws per micro-batch
  };
  SampleSize sample_size(int64_t b, int64_t a) const;
  /// Micro-batches of the first `micro_batches` of a run of `b` rows whose shape is new, less the first.
  double later_shapes(int64_t b, int64_t micro_batches, bool independent);
  Ladder one_micro_batch_ladder(int64_t b, int64_t a);

  Request r_;
  LengthsOptions o_;
  model::LengthDistribution d_;
  model::Padding padding_;
  PaddedLengthCosts costs_;
  bool varying_ = false;
  int64_t rows_per_epoch_ = 0;
  int64_t steps_per_epoch_ = 0;
  ShapeCounts& shapes_;
};

}  // namespace lorasim::sim
