// Token tensors of one micro-batch (token_batch.h).
#include "calibrate/token_batch.h"

#include <algorithm>
#include <vector>

namespace lorasim::calib {

torch::Tensor random_token_ids(int64_t b, int64_t s, int64_t vocab, bool learnable, std::mt19937_64& rng,
                               const torch::Device& device) {
  // The learnable pattern cycles through a few tokens: with frozen random weights a LoRA
  // learns that within a few dozen steps (a full-vocabulary pattern barely moves the loss).
  const int64_t cycle = std::min<int64_t>(vocab, 8);
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::vector<int64_t> ids(static_cast<size_t>(b * s));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t start = token(rng);
    for (int64_t t = 0; t < s; ++t) ids[static_cast<size_t>(i * s + t)] = learnable ? (start + t) % cycle : token(rng);
  }
  return torch::tensor(ids, torch::kInt64).view({b, s}).to(device);
}

TokenBatch padded_token_batch(const SampledMicroBatch& mb, int64_t vocab, bool learnable, std::mt19937_64& rng,
                              const torch::Device& device) {
  const int64_t b = static_cast<int64_t>(mb.lengths_tokens.size());
  const auto ids = random_token_ids(b, mb.width_tokens, vocab, learnable, rng, device);
  const auto lengths = torch::tensor(mb.lengths_tokens, torch::kInt64).view({b, 1}).to(device);
  const auto pad = torch::arange(mb.width_tokens, ids.options()).view({1, -1}) >= lengths;  // (b, width)
  return {ids.masked_fill(pad, 0), ids.masked_fill(pad, -100)};
}

TokenBatch next_token_batch(int64_t b, int64_t s, LengthSampler* sampler, BatchRecord* record, int64_t vocab,
                            bool learnable, std::mt19937_64& rng, const torch::Device& device) {
  if (!sampler) {
    const auto ids = random_token_ids(b, s, vocab, learnable, rng, device);
    return {ids, ids};
  }
  const SampledMicroBatch mb = sampler->next(b);
  if (record) {
    record->widths.add(mb.width_tokens);
    record->real_tokens += static_cast<double>(mb.real_tokens());
  }
  return padded_token_batch(mb, vocab, learnable, rng, device);
}

}  // namespace lorasim::calib
