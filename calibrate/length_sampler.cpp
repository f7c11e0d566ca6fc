// Seeded sampling without replacement from a lengths file (length_sampler.h).
#include "calibrate/length_sampler.h"

#include <algorithm>
#include <string>

#include "model/error.h"

namespace lorasim::calib {

int64_t SampledMicroBatch::real_tokens() const {
  int64_t n = 0;
  for (int64_t l : lengths_tokens) n += l;
  return n;
}

void require_padded_collation(const model::Padding& padding) {
  model::validate_padding(padding);
  if (padding.mode == model::PaddingMode::packed || padding.mode == model::PaddingMode::padding_free)
    throw InputError("lorasim's runner pads micro-batches (--padding longest, multiple:N or max_length); " +
                     model::padding_name(padding) + " lays rows out otherwise and is not run yet");
}

LengthSampler::LengthSampler(const model::LengthDistribution& d, const model::Padding& padding, uint64_t seed)
    : padding_(padding), max_length_tokens_(d.max_length_tokens()), rng_(seed) {
  require_padded_collation(padding);
  if (d.sequences() > kMaxSampledSequences)
    throw InputError("the lengths hold " + std::to_string(d.sequences()) + " sequences, more than a run samples (at most " +
                     std::to_string(kMaxSampledSequences) + "): give the lengths of the data set you train on");
  sequences_.reserve(static_cast<size_t>(d.sequences()));
  for (const model::LengthBin& bin : d.bins()) sequences_.insert(sequences_.end(), static_cast<size_t>(bin.count), bin.length_tokens);
  shuffle();
}

void LengthSampler::shuffle() {
  // Fisher-Yates on the generator's own draws: std::shuffle's use of the engine is the standard
  // library's choice, so the same seed would give other orders elsewhere.
  for (size_t i = sequences_.size(); i > 1; --i) std::swap(sequences_[i - 1], sequences_[rng_() % i]);
  next_ = 0;
}

SampledMicroBatch LengthSampler::next(int64_t micro_batch) {
  if (micro_batch < 1) throw InputError("a micro-batch needs at least 1 sequence, got " + std::to_string(micro_batch));
  SampledMicroBatch mb;
  mb.lengths_tokens.reserve(static_cast<size_t>(micro_batch));
  for (int64_t i = 0; i < micro_batch; ++i) {
    if (next_ == sequences_.size()) shuffle();
    mb.lengths_tokens.push_back(sequences_[next_++]);
  }
  const int64_t longest = *std::max_element(mb.lengths_tokens.begin(), mb.lengths_tokens.end());
  mb.width_tokens = model::padded_length_tokens(padding_, longest, max_length_tokens_);
  return mb;
}

int64_t LengthSampler::max_width_tokens() const {
  return model::padded_length_tokens(padding_, max_length_tokens_, max_length_tokens_);
}

}  // namespace lorasim::calib
