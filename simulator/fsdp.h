// FSDP FULL_SHARD of a LoRA fine-tune on N GPUs of one host (accelerate / Trainer with PEFT,
// use_orig_params, one decoder layer per FSDP unit): what sharding the frozen weights changes in a
// GPU's memory, and what the all-gathers of the weights and the reduce-scatter of the adapters'
// gradients add to its step. Priors, not validated on a GPU: docs/data-parallel.md, "FSDP".
#pragma once
#include <cstdint>

#include "model/hardware.h"
#include "model/workload.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// Decoder layers whose full weights a GPU holds at once: the unit running and the next, which
/// FSDP's prefetch (forward_prefetch / BACKWARD_PRE) gathers while it runs.
inline constexpr int64_t kFsdpLayersInFlight = 2;

/// A ring all-gather (or reduce-scatter) of a `bytes` message among `gpus`: latency x (N-1) +
/// (N-1)/N x bytes / bandwidth, the profile's [interconnect] bus bandwidth; 0 for one GPU.
double ring_allgather_s(double bytes, int64_t gpus, const model::Interconnect& link);

/// Throws InputError (quantity "fsdp") for a quantized base (FSDP of bitsandbytes' weights is not
/// modelled) or fewer than 2 GPUs.
void check_fsdp(const model::Workload& w, int64_t gpus);

FsdpMemory fsdp_memory(const model::Workload& w, int64_t gpus);

/// Collective times of one micro-batch and what of them its compute does not hide.
struct FsdpMicroBatch {
  double comm_s = 0;     ///< every all-gather (and reduce-scatter) of the micro-batch
  double exposed_s = 0;  ///< what it adds to the micro-batch
};

/// One micro-batch of `device_s` device time; `reduce_scatter`: the last of its step, whose
/// backward reduce-scatters the adapters' gradients. Each pass (forward; backward; the backward's
/// recompute under gradient checkpointing) all-gathers every layer once, on one stream, while the
/// pass computes: exposed = one layer's gather (the first, nothing to hide behind) + what the
/// pass's gathers exceed of its compute; the forward also gathers the root unit, exposed whole;
/// the last layer's reduce-scatter is exposed whole.
FsdpMicroBatch fsdp_micro_batch(const model::Workload& w, int64_t gpus, const model::Interconnect& link,
                                double device_s, bool reduce_scatter);

/// A step of `accumulation` micro-batches, the first of `first_device_s`, the rest of
/// `accumulating_device_s`: the sum of fsdp_micro_batch over them (the last reduce-scatters).
FsdpMicroBatch fsdp_step(const model::Workload& w, int64_t gpus, const model::Interconnect& link,
                         double first_device_s, double accumulating_device_s, int64_t accumulation);

}  // namespace lorasim::sim
