// What a request may ask, and the splits it asks for: the micro-batches that divide a GPU's share
// of the effective batch, the request's checks, and the memory left to hold a split.
#pragma once
#include <cstdint>
#include <vector>

#include "model/cost_model.h"
#include "simulator/request.h"

namespace lorasim::sim {

/// All b with b * a = B, ascending.
std::vector<int64_t> divisors(int64_t effective_batch);

/// Throws InputError for an invalid request of rows all `r.workload.train.seq_len` tokens long (B
/// < 1 or above kMaxEffectiveBatch, steps < 1, bf16 on a GPU without it, GPUs that do not divide
/// B, measured runs that are no split of B, tokens per step beyond int64, lengths or padding that
/// make other rows, ...).
void validate_fixed(const Request& r);

/// The memory limit applied (the request's, else the device's).
double memory_limit_bytes(const Request& r);
/// The limit less the safety margin and the device context `c.context_bytes`; throws InputError
/// when nothing is left.
double usable_memory_bytes(const Request& r, const model::Coefficients& c);

/// Throws InputError unless a micro-batch of `b` rows of `row_tokens` with memory `m` is a byte
/// count lorasim reports (int64).
void check_byte_count(const model::MemoryEstimate& m, int64_t b, int64_t row_tokens);

}  // namespace lorasim::sim
