// The token tensors the runner trains on: random rows of one length, or a sampled micro-batch
// of many lengths right-padded as HF's collators pad it. Private to calibrate/ (torch types).
#pragma once
#include <cstdint>
#include <random>

#include <torch/torch.h>

#include "calibrate/length_sampler.h"
#include "model/padded_widths.h"

namespace lorasim::calib {

/// A micro-batch's input ids and its labels (the ids, -100 where a row is padding).
struct TokenBatch {
  torch::Tensor ids, labels;
};

/// (b, s) token ids on `device`, drawn on the host so runs are reproducible per seed: uniform
/// over the vocabulary, or with `learnable` the pattern token[t+1] = (token[t] + 1) % 8.
torch::Tensor random_token_ids(int64_t b, int64_t s, int64_t vocab, bool learnable, std::mt19937_64& rng,
                               const torch::Device& device);

/// The micro-batch's rows at its width: each sequence's tokens as random_token_ids draws them,
/// then pad id 0 after its length, with labels -100 there. Right pads stay out of every real
/// token's causal attention, so no attention mask is needed.
TokenBatch padded_token_batch(const SampledMicroBatch& mb, int64_t vocab, bool learnable, std::mt19937_64& rng,
                              const torch::Device& device);

/// What the timed micro-batches of a lengths run held: their widths and real tokens.
struct BatchRecord {
  model::PaddedWidthCounter widths;
  double real_tokens = 0;  ///< summed over the micro-batches
};

/// The next micro-batch of `b` rows: random rows of `s` tokens without a sampler, else the
/// sampler's next sequences padded (padded_token_batch), their width and tokens added to
/// `record` when given.
TokenBatch next_token_batch(int64_t b, int64_t s, LengthSampler* sampler, BatchRecord* record, int64_t vocab,
                            bool learnable, std::mt19937_64& rng, const torch::Device& device);

}  // namespace lorasim::calib
