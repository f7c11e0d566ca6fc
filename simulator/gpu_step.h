// One GPU's step of one split, as a step source gives it (simulator/step_source.h,
// simulator/lengths_sim.h) and the later stages read it. A plain value.
#pragma once
#include <vector>

#include "model/cost_model.h"
#include "simulator/result.h"
#include "simulator/slowest_gpu.h"

namespace lorasim::sim {

/// One GPU's step of one split.
struct GpuStep {
  Split split;                 ///< one GPU's figures: no collectives, measured runs, fits or rank yet
  LengthFigures lengths;       ///< data of many lengths only; its epoch is the collectives stage's
  double steady_s = 0;         ///< one GPU's mean step without new shapes (rows of one length: the step)
  double steady_p99_s = 0;     ///< the step 99% of one GPU's steady steps stay within (many lengths)
  double first_device_s = 0;   ///< device time of a step's first micro-batch: what the collectives overlap
  double accumulating_device_s = 0;  ///< and of an accumulating one
  double tokens_per_step = 0;  ///< tokens of a step of every GPU (many lengths: the real ones)
  double new_shape_s = 0;      ///< what a micro-batch of a shape new to the process adds (many lengths)
  bool varies = false;         ///< the step varies: lengths.sampled_step_s holds one GPU's steady steps
  Ladder exact;                ///< one GPU's step exactly, where it is one micro-batch of known widths
  model::MemoryEstimate worst_memory;  ///< the cost model's memory of the worst micro-batch, as estimated
};

}  // namespace lorasim::sim
