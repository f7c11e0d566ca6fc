// The simulator's questions, each one run of the pipeline (simulator/pipeline.h): every micro-batch
// x accumulation split of an effective batch, each with predicted step time and peak memory,
// filtered by the memory limit, ranked, recommended.
#pragma once
#include <cstdint>

#include "model/padded_widths.h"
#include "simulator/pipeline.h"
#include "simulator/request.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// Rows all `seq_len` tokens long. Throws InputError for an invalid request (B < 1 or above
/// kMaxEffectiveBatch, steps < 1, bf16 on a GPU without it, a memory limit that leaves nothing
/// usable, a count beyond int64, data of many lengths, ...).
Result simulate(const Request& request);

/// Each split of simulate() twice, without and with checkpointing (Split::grad_ckpt), ascending
/// micro-batch, off before on; ranked by step time among those that fit, the fastest
/// recommended (on equal time: the larger accumulation, then checkpointing off).
/// `r.workload.train.grad_ckpt` is ignored.
Result simulate_both_grad_ckpt(const Request& r);

/// Data of many lengths: `r.workload.train.lengths` (truncated at its maximum length; empty: the
/// one-point distribution at seq_len), `train.padding` how micro-batches are padded; on several
/// GPUs (`gpus` > 1, `fsdp`) each step the slowest GPU's. Ranked by epoch time. Throws InputError
/// as simulate() does, and for options out of range (sampled steps < 1) or measured runs.
LengthsResult simulate_lengths(const Request& r, const LengthsOptions& options = {});

/// The same for both checkpointing settings, as simulate_both_grad_ckpt.
LengthsResult simulate_lengths_both_grad_ckpt(const Request& r, const LengthsOptions& options = {});

/// The split `micro_batch` x (r.effective_batch / r.gpus / micro_batch) of a run whose timed
/// micro-batches had `widths` (simulator/step_source.h, widths_step); the Result holds that one
/// split (rank 1 when it fits) with the limit and usable memory of rows of the largest width.
/// r.workload's lengths and padding are ignored (the widths say what the tensors held). Throws
/// InputError for an invalid request, a micro-batch that does not divide the effective batch, or
/// an invalid histogram (model::validate_padded_widths). `new_shapes_per_step`: micro-batches per
/// step whose shape the process met for the first time; each adds the profile's new_shape_s.
Result simulate_measured_widths(const Request& r, int64_t micro_batch, const model::PaddedWidths& widths,
                                double new_shapes_per_step = 0);

}  // namespace lorasim::sim
