// Gradient checkpointing weighed rather than assumed (`--grad-ckpt auto`): every split with it
// off and on, as one result ranked together. On a small GPU a checkpointed larger micro-batch
// can be the fastest split that fits; on a large one the recomputation is pure cost.
#pragma once
#include "simulator/lengths_sim.h"
#include "simulator/simulate.h"

namespace lorasim::sim {

/// Each split of simulate() twice, without and with checkpointing (Split::grad_ckpt), ascending
/// micro-batch, off before on; ranked by step time among those that fit, the fastest
/// recommended (on equal time: the larger accumulation, then checkpointing off).
/// `r.workload.train.grad_ckpt` is ignored. Throws what simulate() throws.
Result simulate_both_grad_ckpt(const Request& r);

/// The same for data of many lengths (simulate_lengths), ranked by epoch time.
LengthsResult simulate_lengths_both_grad_ckpt(const Request& r, const LengthsOptions& options = {});

}  // namespace lorasim::sim
