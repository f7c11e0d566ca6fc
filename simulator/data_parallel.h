// Data-parallel LoRA on N GPUs of one host (DDP, `torchrun --nproc_per_node N`): what one
// optimizer step adds to a GPU's step -- the all-reduce of the adapters' gradients, how much of it
// the last backward hides -- and to its memory. The equations, and why: docs/data-parallel.md.
#pragma once
#include <cstdint>
#include <optional>

#include "model/hardware.h"
#include "model/workload.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// DDP's default bucket_cap_mb: gradients are all-reduced in buckets of at most this many bytes.
inline constexpr int64_t kDdpBucketBytes = int64_t{25} << 20;
/// The most GPUs of one host lorasim predicts: a host holds 8 or 16; above that it is a typo.
inline constexpr int64_t kMaxGpus = 64;
/// Bytes of one adapter gradient: PEFT's adapters (and lorasim's runner's) are fp32, and their
/// gradients stay fp32 under autocast.
inline constexpr int64_t kAdapterGradientBytes = 4;

/// The link's prior where a profile has no [interconnect] table, or `--link` names another kind:
/// NVLink 3 (the oldest NVLink of the built-in GPUs, A100) and PCIe Gen4 x16, by the rule of the
/// built-in profiles' comments (0.7 x the bandwidth per direction).
model::Interconnect link_prior(model::Link link);
/// What the prediction uses: the profile's table when it has one of `link`'s kind (or `link` is
/// empty), else the prior of the kind asked for (the profile's, else `link`, else PCIe).
model::Interconnect interconnect_for(const model::HardwareModel& hw, std::optional<model::Link> link);

/// ceil(bytes / bucket_bytes), at least 1 for any gradient at all.
int64_t bucket_count(int64_t gradient_bytes, int64_t bucket_bytes = kDdpBucketBytes);

/// A ring all-reduce of `bytes` in `buckets` buckets among `gpus` GPUs:
///   latency x 2(N-1) x buckets + 2(N-1)/N x bytes / bandwidth.
/// 0 for one GPU.
double ring_allreduce_s(double bytes, int64_t buckets, int64_t gpus, const model::Interconnect& link);

/// How much of the all-reduce the step waits for. Buckets of kDdpBucketBytes (the last holds the
/// rest) become ready as the last micro-batch's backward produces their gradients, at an even
/// rate over `backward_s`; each is all-reduced once it is ready and the one before it is done.
/// The exposed time is when the last finishes, less `backward_s`: max(what exceeds the backward
/// once the first bucket is ready, the last bucket's own all-reduce).
double exposed_allreduce_s(double bytes, int64_t gpus, const model::Interconnect& link, double backward_s,
                           int64_t bucket_bytes = kDdpBucketBytes);

/// The share of a micro-batch's device time that is its backward, with frozen base weights: the
/// backward computes input gradients only (one pass of the frozen matmuls, as the forward), and
/// recomputes the forward under gradient checkpointing: 1/2, or 2/3 with checkpointing.
double backward_share(bool grad_ckpt);

/// For `gpus` = 1 every figure is 0. Throws InputError (quantity "gpus") for gpus < 1 or above
/// kMaxGpus.
DataParallelCost data_parallel_cost(const model::Workload& w, int64_t gpus, const model::Interconnect& link,
                                    double micro_batch_device_s);

/// Throws InputError unless `effective_batch` divides among `gpus`; the message names the
/// GPU counts that divide it.
void check_divides(int64_t effective_batch, int64_t gpus);

}  // namespace lorasim::sim
