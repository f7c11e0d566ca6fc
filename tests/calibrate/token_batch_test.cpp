// The runner's padded micro-batches: pad id 0 and labels -100 exactly after each sequence, and
// right pads invisible to the real tokens under causal attention (the logits and the loss of a
// padded row are those of the sequence alone).
#include "calibrate/token_batch.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "calibrate/lora_decoder.h"
#include "model/architecture.h"

namespace lorasim::calib {
namespace {

TEST(TokenBatchTest, PadsAndIgnoredLabelsStartWhereEachSequenceEnds) {
  std::mt19937_64 rng(5);
  SampledMicroBatch mb;
  mb.lengths_tokens = {3, 7, 1};
  mb.width_tokens = 8;  // multiple:8 of the longest
  const TokenBatch t = padded_token_batch(mb, 512, false, rng, torch::kCPU);
  ASSERT_EQ(t.ids.sizes(), (std::vector<int64_t>{3, 8}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t p = 0; p < 8; ++p) {
      const int64_t id = t.ids[i][p].item<int64_t>(), label = t.labels[i][p].item<int64_t>();
      if (p < mb.lengths_tokens[static_cast<size_t>(i)]) {
        EXPECT_EQ(label, id) << i << "," << p;
      } else {
        EXPECT_EQ(id, 0) << i << "," << p;
        EXPECT_EQ(label, -100) << i << "," << p;
      }
    }
  std::mt19937_64 again(5);
  EXPECT_TRUE(torch::equal(padded_token_batch(mb, 512, false, again, torch::kCPU).ids, t.ids));
}

TEST(TokenBatchTest, RightPadsAreInvisibleToTheRealTokens) {
  model::Workload w;
  w.arch = model::preset("tiny");
  w.train.precision = model::Precision::fp32;
  torch::manual_seed(0);
  LoraDecoder model(w, torch::kCPU, torch::kFloat32);
  torch::NoGradGuard no_grad;
  std::mt19937_64 rng(9);
  SampledMicroBatch mb;
  mb.lengths_tokens = {5, 12};
  mb.width_tokens = 12;
  const TokenBatch t = padded_token_batch(mb, w.arch.vocab_size, false, rng, torch::kCPU);
  const auto logits = model->forward(t.ids);
  // Row 0 alone, its 5 real tokens: the same logits where it is real.
  const auto alone_ids = t.ids.slice(0, 0, 1).slice(1, 0, 5);
  const auto alone = model->forward(alone_ids);
  EXPECT_TRUE(torch::allclose(logits.slice(0, 0, 1).slice(1, 0, 5), alone, 1e-5, 1e-5));
  // What the pads hold does not change the loss: their labels are ignored.
  const auto loss = LoraDecoderImpl::causal_lm_loss(logits, t.labels);
  auto other = t.ids.clone();
  other.slice(0, 0, 1).slice(1, 5, 12).fill_(7);
  EXPECT_TRUE(torch::allclose(LoraDecoderImpl::causal_lm_loss(model->forward(other), t.labels), loss, 1e-6, 1e-6));
  // And it is the mean over the real next tokens only: 4 of row 0, 11 of row 1.
  const auto row0 = LoraDecoderImpl::causal_lm_loss(alone, alone_ids);
  const auto row1 = LoraDecoderImpl::causal_lm_loss(logits.slice(0, 1, 2), t.labels.slice(0, 1, 2));
  EXPECT_NEAR(loss.item<double>(), (4 * row0.item<double>() + 11 * row1.item<double>()) / 15, 1e-5);
}

}  // namespace
}  // namespace lorasim::calib
