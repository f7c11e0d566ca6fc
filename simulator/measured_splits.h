// Splits measured on the user's GPU: their step time and peak replace the prediction's, so a
// tuner's decision (a few trial runs, then the fastest split that fits) can be replayed from its
// rows by `lorasim recommend --measured ROWS`.
#pragma once
#include <cstdint>
#include <vector>

#include "simulator/request.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// How far one split's measured peak reserved memory moves between runs, relative. A run at a
/// fixed length allocates the same tensors each time; what varies is where the caching allocator
/// cuts its segments. Repeated splits on the H200 (bench/results/h200: the runner's accuracy-run3
/// and -run4, 152 splits; hf-peft-run2 to -run8, ~300 rows) reserved the same peak to the byte
/// under expandable segments, and under PyTorch's default allocator within 1.09% at most (one
/// 256 MiB segment more in llama-3.2-3b 4x1 at 2048 tokens, checkpointed). 1.5% covers that.
/// A measured split's worst case adds this, not the prediction's error.
inline constexpr double kMeasuredPeakRepeatability = 0.015;

/// Replaces `s`'s figures with those of the runs in `runs` of its micro-batch and checkpointing (none: `s` is
/// unchanged): several runs of one split give their mean step time and their largest peak, and
/// one out-of-memory run among them makes the split not fit. It fits when its peak plus
/// kMeasuredPeakRepeatability stays within `allocator_bytes` (the limit less the CUDA context,
/// which no measured peak includes): a measured peak already holds the fragmentation and spikes
/// the prediction's safety margin stands for.
void apply_measured(const std::vector<MeasuredSplit>& runs, double allocator_bytes, int64_t steps,
                    double tokens_per_step, Split& s);

/// Throws InputError unless every run is a split micro_batch x accumulation of `effective_batch`.
void check_measured(const std::vector<MeasuredSplit>& runs, int64_t effective_batch);

}  // namespace lorasim::sim
