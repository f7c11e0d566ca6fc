// Data of many lengths on N GPUs of one host (DDP or FSDP): every GPU draws its own micro-batches
// (DistributedSampler's shard, padded by the GPU), and the optimizer step waits for the slowest
// (the gradients' collective is a barrier), so a step is the maximum over N independent GPUs of one
// GPU's step. docs/lengths.md ("Several GPUs") has the maths.
#pragma once
#include <cstdint>
#include <vector>

namespace lorasim::sim {

/// E[max of `ranks` independent draws] of the empirical distribution of `sorted` (ascending):
/// sum_k x_(k) ((k/m)^N - ((k-1)/m)^N). `ranks` 1 gives the mean.
double expected_max_of_sorted(const std::vector<double>& sorted, int64_t ranks);
/// The `q` quantile of that maximum: the quantile q^(1/N) of one draw, x_(ceil(m q^(1/N))).
double max_quantile_of_sorted(const std::vector<double>& sorted, int64_t ranks, double q);

/// A distribution over ascending values: value_i with probability P(X <= value_i) = cdf_i.
struct Ladder {
  std::vector<double> values;  ///< ascending
  std::vector<double> cdf;     ///< non-decreasing, last 1
};
/// E[max of N draws] = sum_i value_i (cdf_i^N - cdf_{i-1}^N), exactly.
double expected_max(const Ladder& l, int64_t ranks);
/// The smallest value_i with cdf_i^N >= q.
double max_quantile(const Ladder& l, int64_t ranks, double q);

}  // namespace lorasim::sim
