// Distinct padded shapes of a run that draws its data as a trainer does: without replacement, a
// new random order each epoch (HF's RandomSampler). Within an epoch every sequence comes once, so
// rare lengths are met where independent draws (model/new_shapes.h) would miss them: over a whole
// epoch of 512 sequences at micro-batch 1, every distinct length is a shape of its own.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "model/lengths.h"

namespace lorasim::model {

/// The expected number of distinct shapes (padded row length and rows) among the first
/// `micro_batches` micro-batches of `b` sequences of a run over `d`, by seeded shuffles of the
/// data; the epoch's last micro-batch keeps its remainder. Data of more than 2^20 sequences,
/// whose lengths repeat too often for the draw to matter, takes expected_new_shapes(). The same
/// seed gives the same figure. Throws InputError unless b > 0 and micro_batches >= 0.
double epoch_new_shapes(const LengthDistribution& d, const Padding& padding, int64_t b, int64_t micro_batches,
                        bool group_by_length = false, uint64_t seed = 0);

/// epoch_new_shapes() of one data set and seed for many micro-batch sizes, paddings and run
/// lengths, each figure the same as the function's. The data's sorted lengths and its first
/// full shuffle are alike for every call, so they are made once, when first needed (a million
/// sequences: tens of ms a shuffle, which each micro-batch size otherwise redid). Not for
/// concurrent use: the first call fills them.
class EpochShapes {
 public:
  explicit EpochShapes(LengthDistribution d, uint64_t seed = 0);
  double new_shapes(const Padding& padding, int64_t b, int64_t micro_batches, bool group_by_length = false);

 private:
  /// Every sequence's length, ascending.
  const std::vector<int32_t>& sorted();
  /// The sorted lengths shuffled whole by a generator fresh from the seed; `after` is that
  /// generator once it has.
  struct Shuffled {
    std::vector<int32_t> order;
    std::mt19937_64 after;
  };
  const Shuffled& shuffled();

  LengthDistribution d_;
  uint64_t seed_ = 0;
  std::vector<int32_t> sorted_;
  std::optional<Shuffled> shuffled_;
};

}  // namespace lorasim::model
