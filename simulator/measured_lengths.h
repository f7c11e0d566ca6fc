// The prediction of a run whose micro-batches' padded widths were recorded (a measurement row's
// padded_lengths): what that run did, priced width by width, rather than what random
// micro-batches of a length distribution would do (lengths_sim). validate scores such rows by it.
#pragma once
#include <cstdint>

#include "model/padded_widths.h"
#include "simulator/simulate.h"

namespace lorasim::sim {

/// The split `micro_batch` x (r.effective_batch / micro_batch) of the run whose timed
/// micro-batches had `widths`: its step is the optimizer plus, for each of its micro-batches, the
/// cost model's time of `micro_batch` rows at the mean over the histogram (the first of a step
/// not accumulating, the rest accumulating), combined as CostModel::step_of combines a step; its
/// memory is the cost model's at the largest width, plus the allocator's hold for varying shapes
/// (varying_shape_share) where the histogram holds more than one width. One width gives
/// simulate()'s figures at that sequence length. The Result holds that one split (rank 1 when
/// it fits) with simulate()'s limit and usable memory at the largest width.
/// r.workload's lengths and padding are ignored (the widths say what the tensors held).
/// Throws InputError for an invalid request, a micro-batch that does not divide the effective
/// batch, or an invalid histogram (model::validate_padded_widths).
/// `new_shapes_per_step`: micro-batches per step whose shape the process met for the first time
/// (a row's new_shapes_per_step); each adds the profile's new_shape_s to the step.
Result simulate_measured_widths(const Request& r, int64_t micro_batch, const model::PaddedWidths& widths,
                                double new_shapes_per_step = 0);

}  // namespace lorasim::sim
