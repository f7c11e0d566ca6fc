// Several GPUs of one host, once for every step source: a split's step on N GPUs is the slowest
// GPU's step (where steps vary) plus what the collectives -- DDP's all-reduce, or FSDP's gathers
// -- do not hide, and each GPU's memory changes by DDP's buckets or FSDP's shards. On one GPU
// nothing is added; the run time, tokens/s and (data of many lengths) the epoch follow here.
#pragma once
#include <cstdint>

#include "model/workload.h"
#include "simulator/request.h"
#include "simulator/result.h"
#include "simulator/gpu_step.h"

namespace lorasim::sim {

/// What the GPUs of a request share, alike for every split.
struct Collectives {
  int64_t gpus = 1;
  bool fsdp = false;            ///< FULL_SHARD instead of DDP
  model::Interconnect link;     ///< gpus > 1
  FsdpMemory fsdp_memory;       ///< fsdp only
  DataParallelCost data_parallel;  ///< the gradients and buckets (its times are each split's)
};

/// Of `r`'s GPUs, under FSDP where `fsdp`.
Collectives collectives_of(const Request& r, bool fsdp);

/// The split of every GPU from one GPU's step `g` of workload `w`, over `steps` optimizer steps.
void add_collectives(const model::Workload& w, const Collectives& c, int64_t steps, const GpuStep& g, Split& s,
                     LengthFigures& f);

}  // namespace lorasim::sim
