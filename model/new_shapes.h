// How many micro-batches of a run meet a padded shape the process has not run before. Kernel
// libraries choose (and cache) their kernels per tensor shape, so the first micro-batch of each
// shape is slower; with data of many lengths that is most of a short run and part of the first
// epoch. docs/lengths.md ("New shapes") derives the count.
#pragma once
#include <cstdint>

#include "model/lengths.h"

namespace lorasim::model {

/// The expected number of distinct shapes among `micro_batches` random micro-batches of `b`
/// rows: sum over the shapes w of 1 - (1 - p_w)^K, p_w the chance that one micro-batch has shape
/// w (its padded row length under `padding`; padding-free: its token total, the shape of its one
/// packed row). Each distinct shape is met once for the first time, so this is also the expected
/// number of micro-batches that meet a new shape. 0 for no micro-batch; at most 1 for one shape.
/// Throws InputError unless b > 0 and micro_batches >= 0.
double expected_new_shapes(const LengthDistribution& d, const Padding& padding, int64_t b, int64_t micro_batches,
                           bool group_by_length = false);

}  // namespace lorasim::model
