// Where a split's step time and memory come from: one GPU's step, before the collectives of
// several GPUs (simulator/collectives.h), the measured runs and the fits. Three sources, one step:
// the cost model's step of rows of one length (fixed_step, here), that step over the
// distribution of the micro-batches' padded widths (simulator/lengths_sim.h), and over the
// widths a run recorded (widths_step, here).
#pragma once
#include <cstdint>

#include "model/cost_model.h"
#include "model/padded_widths.h"
#include "simulator/gpu_step.h"
#include "simulator/request.h"

namespace lorasim::sim {

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
