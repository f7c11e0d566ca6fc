// What the padding of data of many lengths costs the recommendation, and what would cost less:
// the next best split, the recommended split with packing (TRL packing=True) and with HF's
// group_by_length where either would make an epoch faster; and, under the default allocator, the
// split that expandable segments would let fit where the default allocator's fragmentation bound
// refuses it. The pipeline's last stage (simulator/pipeline.h, Plan::advice).
#pragma once
#include <vector>

#include "simulator/collectives.h"
#include "simulator/request.h"
#include "simulator/result.h"
#include "simulator/gpu_step.h"

namespace lorasim::sim {

/// For `res`, the ranked result of `r` over data of many lengths sampled as `o` (under one or
/// both checkpointing settings), `steps` its GPU steps (parallel to its splits) and `c` its
/// collectives: the next best split, and each alternative at least 1% faster per epoch -- the
/// recommended split (its micro-batch and checkpointing) drawn again with the other padding or
/// grouping, as a simulation of that request draws it; under the default allocator, the splits'
/// memory under expandable segments, ranked again. Nothing where nothing is recommended.
PaddingAdvice padding_advice(const Request& r, const LengthsOptions& o, const LengthsResult& res,
                             const std::vector<GpuStep>& steps, const Collectives& c);

}  // namespace lorasim::sim
