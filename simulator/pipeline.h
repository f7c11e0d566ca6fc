// The simulator as one pipeline. Every question -- rows of one length, data of many lengths, a
// run's recorded widths, one GPU or several, checkpointing as given or both ways -- runs the same
// stages, each once:
//   1. the splits: micro-batch x accumulation of a GPU's share of B, per checkpointing setting
//      (simulator/splits.h, which also checks the request);
//   2. each split's step time and memory on one GPU, from one step source
//      (simulator/step_source.h: model::CostModel::step for one length, the same step over the
//      padded widths' distribution for many, simulator/lengths_sim.h);
//   3. the collectives of several GPUs, the run time, tokens/s and epoch (simulator/collectives.h);
//   4. measured runs in place of the prediction (simulator/measured_splits.h);
//   5. the fits and one ranking (step time; epoch time for many lengths);
//   6. the notes, as typed values (simulator/notes.h; sentences: simulator/note_text.h);
//   7. for many lengths, where asked, the padding advice (simulator/padding_advice.h).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "model/padded_widths.h"
#include "simulator/request.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// The split of a run whose micro-batches' padded widths were recorded (a measurement row's).
struct MeasuredWidths {
  int64_t micro_batch = 0;
  model::PaddedWidths widths;
  double new_shapes_per_step = 0;  ///< micro-batches per step of a shape new to the process
};

/// What to simulate of a request beyond its splits.
struct Plan {
  bool both_grad_ckpt = false;           ///< every split with checkpointing off and on (the workload's ignored)
  std::optional<LengthsOptions> lengths; ///< data of many lengths (the workload's lengths and padding)
  std::optional<MeasuredWidths> widths;  ///< one split, priced over recorded widths
  bool advice = false;                   ///< many lengths: the padding advice of the recommendation
};

/// Throws InputError for an invalid request or plan (simulator/splits.h says which).
LengthsResult run(const Request& r, const Plan& plan);

}  // namespace lorasim::sim
