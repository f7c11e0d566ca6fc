// Exact checks of the analytic counts against hand-derived values.
#include "model/analytics.h"

#include <gtest/gtest.h>

#include "model/architecture.h"
#include "model/error.h"

using namespace lorasim::model;
using lorasim::InputError;

namespace {
Workload workload(const std::string& preset_name, int64_t seq_len = 512) {
  Workload w;
  w.arch = preset(preset_name);
  w.train.seq_len = seq_len;
  return w;
}
}  // namespace

TEST(AnalyticsTest, Qwen3_1_7bBaseParametersMatchPublishedCount) {
  const ParamCounts c = count_params(preset("qwen3-1.7b"), LoraSpec{});
  EXPECT_EQ(c.base, 1'720'574'976);
  EXPECT_EQ(c.lm_head, 0);  // tied embeddings
}

TEST(AnalyticsTest, Qwen3_1_7bDefaultLoraTrainableParameters) {
  const ParamCounts c = count_params(preset("qwen3-1.7b"), LoraSpec{});
  EXPECT_EQ(c.trainable, 17'432'576);
  EXPECT_EQ(c.lora_tensors, 28 * 7 * 2);
}

TEST(AnalyticsTest, Qwen2_5_0_5bWithAttentionBiasMatchesPublishedCount) {
  // Qwen2.5-0.5B: 494,032,768 parameters, the q/k/v biases (896 + 2 x 128 per layer) included.
  const ParamCounts c = count_params(preset("qwen2.5-0.5b"), LoraSpec{});
  EXPECT_EQ(c.base, 494'032'768);
  EXPECT_EQ(c.lm_head, 0);
}

TEST(AnalyticsTest, UntiedHeadAddsVocabTimesHidden) {
  const ParamCounts c = count_params(preset("qwen3-8b"), LoraSpec{});
  EXPECT_EQ(c.lm_head, 151936LL * 4096);
  EXPECT_EQ(c.base, c.embedding + c.lm_head + 36 * c.per_layer + 4096);
}

TEST(AnalyticsTest, LoraTrainableScalesWithRankAndTargets) {
  LoraSpec lora;
  lora.rank = 8;
  lora.targets = {Target::q, Target::v};
  const ParamCounts c = count_params(preset("llama-3.2-1b"), lora);
  // q: 8*(2048+2048), v: 8*(2048+512) per layer, 16 layers.
  EXPECT_EQ(c.trainable, 16 * (8 * (2048 + 2048) + 8 * (2048 + 512)));
  EXPECT_EQ(c.lora_tensors, 16 * 2 * 2);
}

TEST(AnalyticsTest, GemmFlopsAreFourTimesTokensTimesWeightsWithoutCheckpointing) {
  Workload w = workload("tiny", 32);
  const Flops f = flops_per_micro_batch(w, 3);
  const double n = 3 * 32;
  const double block = 64.0 * 64 + 64.0 * 32 * 2 + 64.0 * 64 + 3 * 64.0 * 176;  // q,k,v,o,gate,up,down
  EXPECT_DOUBLE_EQ(f.gemm, 2 * 4 * n * block);
  EXPECT_DOUBLE_EQ(f.head, 4 * n * 512 * 64);
  // LoRA: 6 n r (in + out) per adapter.
  const double widths = (64 + 64) + 2 * (64 + 32) + (64 + 64) + 2 * (64 + 176) + (176 + 64);
  EXPECT_DOUBLE_EQ(f.lora, 2 * 6 * n * 16 * widths);
  // Attention: 12 b H s^2 d per block.
  EXPECT_DOUBLE_EQ(f.attention, 2 * 12.0 * 3 * 4 * 32 * 32 * 16);
}

TEST(AnalyticsTest, CheckpointingAddsOneForwardPass) {
  Workload w = workload("qwen3-0.6b", 256);
  const Flops plain = flops_per_micro_batch(w, 2);
  w.train.grad_ckpt = true;
  const Flops ckpt = flops_per_micro_batch(w, 2);
  EXPECT_DOUBLE_EQ(ckpt.gemm / plain.gemm, 6.0 / 4.0);
  EXPECT_DOUBLE_EQ(ckpt.head, plain.head);  // the head is outside the checkpointed blocks
  EXPECT_DOUBLE_EQ(ckpt.lora / plain.lora, 8.0 / 6.0);
  EXPECT_DOUBLE_EQ(ckpt.attention / plain.attention, 4.0 / 3.0);
}

TEST(AnalyticsTest, StaticMemoryTerms) {
  Workload w = workload("qwen3-1.7b");
  const StaticMemory m = static_memory(w);
  EXPECT_EQ(m.weights_bytes, 1'720'574'976LL * 2);
  EXPECT_EQ(m.adapter_bytes, 17'432'576LL * 4);
  EXPECT_EQ(m.gradient_bytes, 17'432'576LL * 4);
  EXPECT_EQ(m.optimizer_bytes, 17'432'576LL * 8);
  w.train.precision = Precision::fp32;
  EXPECT_EQ(static_memory(w).weights_bytes, 1'720'574'976LL * 4);
}

TEST(AnalyticsTest, LogitsBytesPerTokenInBf16) {
  Workload w = workload("qwen3-1.7b");
  const ActivationMemory a = activation_memory(w, 4);
  // bf16 logits + fp32 copy + fp32 log-softmax + fp32 grad + bf16 grad = 16 bytes per entry.
  EXPECT_DOUBLE_EQ(a.logits_bytes, 4.0 * 512 * 151936 * 16);
}

TEST(AnalyticsTest, ActivationsGrowLinearlyWithMicroBatch) {
  Workload w = workload("llama-3.2-3b", 1024);
  const ActivationMemory a1 = activation_memory(w, 1), a4 = activation_memory(w, 4);
  EXPECT_DOUBLE_EQ(a4.saved_bytes, 4 * a1.saved_bytes);
  EXPECT_DOUBLE_EQ(a4.logits_bytes, 4 * a1.logits_bytes);
  w.train.grad_ckpt = true;
  EXPECT_LT(activation_memory(w, 4).saved_bytes, a4.saved_bytes / 4);
}

TEST(AnalyticsTest, CheckpointingSavesBlockInputsAndRebuildsOneBlock) {
  Workload w = workload("qwen3-1.7b", 1024);
  const ActivationMemory plain = activation_memory(w, 2);
  w.train.grad_ckpt = true;
  const ActivationMemory ckpt = activation_memory(w, 2);
  const double n = 2.0 * 1024, h = 2048, L = 28;
  // Block inputs (L x h) plus embedding output, final norm input and output (3h), in bf16.
  EXPECT_DOUBLE_EQ(ckpt.saved_bytes, n * (L * h + 3 * h) * 2);
  // The rebuilt block is one of the blocks that plain training keeps all of.
  EXPECT_DOUBLE_EQ(ckpt.recompute_bytes, (plain.saved_bytes - n * 3 * h * 2) / L);
  EXPECT_DOUBLE_EQ(plain.recompute_bytes, 0);
  // One bf16 logits tensor: b x s x vocab x 2 bytes, whatever the checkpointing.
  EXPECT_DOUBLE_EQ(ckpt.logits_buffer_bytes, n * 151936 * 2);
  EXPECT_DOUBLE_EQ(plain.logits_buffer_bytes, ckpt.logits_buffer_bytes);
}

TEST(AnalyticsTest, RecomputeOpsAreOneForwardOfEveryBlock) {
  Workload w = workload("qwen3-1.7b");
  EXPECT_DOUBLE_EQ(recompute_ops_per_micro_batch(w), 0);
  // Forward of a Qwen3 block: 52 base operators, 16 for the q/k norms, 6 per adapter (7).
  const double fwd = 52 + 16 + 6 * 7;
  EXPECT_DOUBLE_EQ(host_ops_per_micro_batch(w), 28 * fwd * 2.5 + 40);
  w.train.grad_ckpt = true;
  EXPECT_DOUBLE_EQ(recompute_ops_per_micro_batch(w), 28 * fwd);
  EXPECT_DOUBLE_EQ(host_ops_per_micro_batch(w), 28 * fwd * 3.5 + 40);
}

namespace {
// A block small enough to count by hand: h = 4, i = 8, q_dim = 4, kv_dim = 2, LoRA on q only.
Workload toy_block(Precision p) {
  Workload w;
  w.arch = Architecture{};
  w.arch.name = "toy";
  w.arch.hidden_size = 4;
  w.arch.intermediate_size = 8;
  w.arch.num_layers = 2;
  w.arch.num_heads = 2;
  w.arch.num_kv_heads = 1;
  w.arch.head_dim = 2;
  w.arch.vocab_size = 16;
  w.lora.rank = 1;
  w.lora.targets = {Target::q};
  w.train.seq_len = 5;
  w.train.precision = p;
  return w;
}
}  // namespace

TEST(AnalyticsTest, BlockTrafficCountsEachOperatorOfTheReferenceBlock) {
  const BlockTraffic t = block_memory_traffic(toy_block(Precision::bf16));
  // bf16 (e = 2), fp32 statistics (4), a cast 2 + 4 = 6 bytes per element.
  // Forward: RMSNorm 2*6 + 5*4 + 2*2 = 36 per element over 2h = 8 -> 288; RoPE 10e over
  // q + kv = 6 -> 120; attention e(2*4 + 2*2) + layout copy 2e*4 -> 40; SwiGLU 5e*8 -> 80;
  // residuals 6e*4 -> 48; the q adapter e(4 + 6*4) -> 56. Sum 632.
  EXPECT_DOUBLE_EQ(t.forward_bytes_per_token, 632);
  // Backward: RMSNorm 2*6 + 13*4 + 2*2 = 68 -> 544; RoPE 15e*6 -> 180; attention
  // e(4*4 + 4*2) + 2e*4 -> 64; SwiGLU 9e*8 -> 144; residuals 48; adapter e(5*4 + 4*4) -> 72.
  EXPECT_DOUBLE_EQ(t.backward_bytes_per_token, 1052);
}

TEST(AnalyticsTest, BlockTrafficOfQkNormAndFp32) {
  Workload w = toy_block(Precision::bf16);
  w.arch.qk_norm = true;  // two more RMSNorms over q + kv = 6 elements per token
  const BlockTraffic qk = block_memory_traffic(w);
  EXPECT_DOUBLE_EQ(qk.forward_bytes_per_token, 632 + 36 * 6);
  EXPECT_DOUBLE_EQ(qk.backward_bytes_per_token, 1052 + 68 * 6);
  // fp32: no casts, every element 4 bytes. RMSNorm 5*4 + 2*4 = 28 forward, 13*4 + 2*4 = 60
  // backward; every other term doubles with e.
  const BlockTraffic f = block_memory_traffic(toy_block(Precision::fp32));
  EXPECT_DOUBLE_EQ(f.forward_bytes_per_token, 28 * 8 + 2 * (632 - 288));
  EXPECT_DOUBLE_EQ(f.backward_bytes_per_token, 60 * 8 + 2 * (1052 - 544));
}

TEST(AnalyticsTest, MemoryBoundBytesScaleWithTokensAndLayersAndRecomputeTheForward) {
  Workload w = toy_block(Precision::bf16);
  // n = 3 x 5 tokens, 2 layers.
  EXPECT_DOUBLE_EQ(memory_bound_bytes(w, 3), 15.0 * 2 * (632 + 1052));
  w.train.grad_ckpt = true;  // the forward runs twice
  EXPECT_DOUBLE_EQ(memory_bound_bytes(w, 3), 15.0 * 2 * (2 * 632 + 1052));
}

TEST(AnalyticsTest, CountsBeyondInt64AreAnInputErrorNotAWrappedNumber) {
  Architecture a = preset("qwen3-8b");  // untied: embedding and head both vocab x hidden
  a.vocab_size = 2'000'000'000'000'000;  // 2e15 x 4096 = 8.2e18 fits once, not twice
  EXPECT_THROW(count_params(a, LoraSpec{}), InputError);
  EXPECT_THROW(a.validate(), InputError);
  a = preset("qwen3-8b");
  a.num_layers = int64_t{1} << 62;
  EXPECT_THROW(count_params(a, LoraSpec{}), InputError);
  a = preset("qwen3-8b");
  a.num_heads = a.num_kv_heads = int64_t{1} << 62;  // q_dim = heads x head_dim
  EXPECT_THROW(count_params(a, LoraSpec{}), InputError);
  // Parameters that fit whose fp32 bytes do not: 2^61 embedding parameters x 4 bytes.
  a = preset("tiny");
  a.vocab_size = (int64_t{1} << 61) / a.hidden_size;
  EXPECT_NO_THROW(count_params(a, LoraSpec{}));
  EXPECT_THROW(a.validate(), InputError);
}

TEST(AnalyticsTest, StaticBytesBeyondInt64AreAnInputError) {
  Workload w = workload("tiny");
  w.arch.vocab_size = (int64_t{1} << 61) / w.arch.hidden_size;  // 2^61 parameters
  w.train.precision = Precision::bf16;
  EXPECT_NO_THROW(static_memory(w));  // x 2 bytes fits
  w.train.precision = Precision::fp32;
  EXPECT_THROW(static_memory(w), InputError);
  EXPECT_THROW(w.validate(), InputError);
}
