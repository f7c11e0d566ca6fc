// Micro-batches drawn from a lengths file, as a data loader's random sampler draws them from a
// data set: the file's sequences in a seeded random order without replacement (a new order
// each pass), `b` at a time, and the width the collation pads them to. The LibTorch runner
// trains on them (calibrate/runner.h); pure C++, so it is tested without LibTorch.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "model/lengths.h"

namespace lorasim::calib {

/// The most sequences a sampler holds (the file's count); more is a histogram of a corpus, not
/// of data a run samples, and would take gigabytes.
inline constexpr int64_t kMaxSampledSequences = 50'000'000;

/// Throws InputError unless `padding` is one a runner pads rows to: longest, multiple:N or
/// max_length (packed and padding-free lay rows out otherwise, and no runner does that yet).
void require_padded_collation(const model::Padding& padding);

/// One micro-batch: its sequences' lengths (after truncation) and the width of its rows.
struct SampledMicroBatch {
  std::vector<int64_t> lengths_tokens;
  int64_t width_tokens = 0;
  int64_t real_tokens() const;
};

class LengthSampler {
 public:
  /// `d`: the data (truncated at its maximum length); `padding`: longest, multiple:N or
  /// max_length -- the collations a runner pads rows to (packed and padding-free lay rows out
  /// otherwise). Throws InputError for another padding or more than kMaxSampledSequences.
  LengthSampler(const model::LengthDistribution& d, const model::Padding& padding, uint64_t seed);

  /// The next `micro_batch` sequences of the order; at the end of a pass the order is drawn
  /// again and the micro-batch continues in it (a micro-batch larger than the data repeats
  /// sequences across passes). Width: model::padded_length_tokens of their longest.
  SampledMicroBatch next(int64_t micro_batch);
  /// The widest a micro-batch can be: the collation's width of the longest sequence.
  int64_t max_width_tokens() const;

 private:
  void shuffle();

  model::Padding padding_;
  int64_t max_length_tokens_ = 0;
  std::vector<int64_t> sequences_;  // every sequence's length, in the current order
  size_t next_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace lorasim::calib
