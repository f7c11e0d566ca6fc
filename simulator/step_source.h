// Where a split's step time and memory come from: one GPU's step, before the collectives of
// several GPUs (simulator/collectives.h), the measured runs and the fits. Three sources, one step:
// the cost model's step of rows of one length (fixed_step, here), that step over the
// distribution of the micro-batches' padded widths (simulator/lengths_sim.h), and over the
// widths a run recorded (widths_step, here).
#pragma once
#include <cstdint>

#include "model/cost_model.h"
#include "model/padded_widths.h"
#include "simulator/request.h"
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

/// The step of `b` rows of `seq_len` tokens, `a` micro-batches, by `cost` (model::CostModel::step);
/// `gpus` GPUs' tokens per step. Throws InputError where its memory is beyond a byte count.
GpuStep fixed_step(const model::CostModel& cost, int64_t seq_len, int64_t b, int64_t a, int64_t gpus);

/// The split `micro_batch` x (r.effective_batch / r.gpus / micro_batch) of a run whose micro-batches
/// had `widths` (a measurement row's padded_lengths): each micro-batch priced at the mean over the
/// histogram (the first of a step not accumulating, the rest accumulating), combined as
/// CostModel::step_of combines a step, plus `new_shapes_per_step` x new_shape_s; memory the cost
/// model's at the largest width, plus the allocator's hold for varying shapes where there are
/// several widths. One width gives fixed_step's figures at that length.
GpuStep widths_step(const Request& r, int64_t micro_batch, const model::PaddedWidths& widths,
                    double new_shapes_per_step);

}  // namespace lorasim::sim
