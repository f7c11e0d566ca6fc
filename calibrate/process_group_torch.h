// The torch side of calibrate/process_group.h (private to calibrate/): the c10d backend behind
// a ProcessGroup and the collectives the runner and the all-reduce timing call on it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "calibrate/process_group.h"

namespace lorasim::calib {

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  std::string backend;
  /// In-place sum over the ranks of tensors that live on the rank's device; returns when done.
  std::function<void(std::vector<torch::Tensor>&)> allreduce_sum;
  /// In-place maximum over the ranks.
  std::function<void(std::vector<torch::Tensor>&)> allreduce_max;
  std::function<void()> barrier;
  std::shared_ptr<void> keep;  ///< the store and the backend: c10d objects of either LibTorch API
};

/// DDP's default bucket_cap_mb: gradients travel in flat buckets of at most this many bytes.
inline constexpr int64_t kGradientBucketBytes = int64_t{25} << 20;

/// Averages every tensor's .grad over the ranks, as DDP does once per optimizer step: packed into
/// flat fp32 buckets of kGradientBucketBytes, summed, divided by the group's size, copied back.
/// A tensor without a gradient counts as zeros (every rank must pass the same tensors).
void average_gradients(ProcessGroup& group, const std::vector<torch::Tensor>& params);

/// The mean over the ranks of one number each.
double average_over_ranks(ProcessGroup& group, double value, const torch::Device& device);

}  // namespace lorasim::calib
