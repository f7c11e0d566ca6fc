// The hf-peft stack's saved-tensor counts against docs/hf-stack-memory.md, which were measured to
// the byte (tests/python/test_saved_tensors.py): the table's figures and the micro-batch totals.
#include "model/hf_analytics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/architecture.h"
#include "model/cost_model.h"

using namespace lorasim::model;

namespace {

Workload hf(const std::string& preset_name, bool autocast, double dropout, int64_t seq_len = 512) {
  Workload w;
  w.arch = preset(preset_name);
  w.train.seq_len = seq_len;
  w.train.precision = Precision::bf16;
  w.stack.kind = StackKind::hf_peft;
  w.stack.attn_impl = AttnImpl::sdpa;
  w.stack.autocast = autocast;
  w.stack.lora_dropout = dropout;
  w.validate();
  return w;
}

struct TableRow {
  const char* model;
  double on, on_dropout, off, off_dropout;  // bytes per token per block
};

// docs/hf-stack-memory.md, "per token per block (bf16 model, SDPA, r = 16, all seven)".
const TableRow kDocTable[] = {
    {"qwen3-1.7b", 115080, 133512, 152168, 170600},
    {"llama-3.2-1b", 117096, 137576, 158280, 178760},
    {"qwen2.5-0.5b", 61216, 71456, 81920, 92160},
    {"mistral-7b", 217448, 256360, 295496, 334408},
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST(HfAnalyticsTest, BlockSavedPerTokenMatchesTheDocsTableExactly) {
  for (const TableRow& row : kDocTable) {
    SCOPED_TRACE(row.model);
    EXPECT_EQ(hf_block_saved_per_token(hf(row.model, true, 0.0), false), row.on);
    EXPECT_EQ(hf_block_saved_per_token(hf(row.model, true, 0.05), false), row.on_dropout);
    EXPECT_EQ(hf_block_saved_per_token(hf(row.model, false, 0.0), false), row.off);
    EXPECT_EQ(hf_block_saved_per_token(hf(row.model, false, 0.05), false), row.off_dropout);
  }
}

TEST(HfAnalyticsTest, DropoutAddsOneMaskBytePerAdaptedInputElement) {
  // S_in = 5h + qd + i for all seven; the mask does not depend on the probability.
  const Workload w = hf("llama-3.2-1b", true, 0.0);
  const double s_in = 5 * 2048 + 2048 + 8192;
  EXPECT_EQ(hf_block_saved_per_token(hf("llama-3.2-1b", true, 0.3), false) - hf_block_saved_per_token(w, false), s_in);
}

TEST(HfAnalyticsTest, FirstBlockSavesNoInputNormAndNoQkvMasks) {
  // Block 0's input (the frozen embedding's output) needs no gradient: no input RMSNorm save
  // (4h + 4) and, with dropout, no masks of q/k/v's inputs (3h bytes on CUDA).
  const double h = 2048;
  const Workload plain = hf("qwen3-1.7b", true, 0.0), dropped = hf("qwen3-1.7b", true, 0.05);
  EXPECT_EQ(hf_block_saved_per_token(plain, true), 115080 - (4 * h + 4));
  EXPECT_EQ(hf_block_saved_per_token(dropped, true), 133512 - (4 * h + 4) - 3 * h);
}

TEST(HfAnalyticsTest, ActivationMemoryFollowsTheDocsMicroBatchFormulaWithoutCheckpointing) {
  // llama-3.2-1b: h = 2048, L = 16, V = 128256, bf16 (e = 2), autocast, dropout 0.05.
  const Workload w = hf("llama-3.2-1b", true, 0.05, 256);
  const double b = 3, n = b * 256, h = 2048, L = 16, V = 128256, e = 2;
  const double block = 137576, block0 = block - (4 * h + 4) - 3 * h;
  const ActivationMemory m = hf_activation_memory(w, 3);
  EXPECT_EQ(m.saved_bytes, n * ((L - 1) * block + block0) + n * (4 * h + 4) + 4 * n * V + 8 * n);
  EXPECT_EQ(m.logits_bytes, 8 * n * V);  // peak = static + saved + 8 n V
  EXPECT_EQ(m.recompute_bytes, 0.0);
  EXPECT_EQ(m.logits_buffer_bytes, e * n * V);
  EXPECT_EQ(m.attention_score_bytes, 0.0);  // SDPA keeps no scores
}

TEST(HfAnalyticsTest, ActivationMemoryFollowsTheDocsMicroBatchFormulaWithCheckpointing) {
  Workload w = hf("llama-3.2-1b", true, 0.05, 256);
  w.train.grad_ckpt = true;
  const double b = 3, n = b * 256, h = 2048, L = 16, V = 128256, e = 2;
  const double block = 137576;  // every block, block 0 included, once its input requires grad
  const ActivationMemory m = hf_activation_memory(w, 3);
  EXPECT_EQ(m.saved_bytes, L * n * h * e + n * (4 * h + 4) + 4 * n * V + 8 * n);
  EXPECT_EQ(m.logits_bytes, 8 * n * V);
  // The rebuilt block after the loss's buffers (its log-softmax output among them) are freed,
  // with the block's input and output gradient buffers (2 n h e). Here the loss's 8 n V is the
  // larger; the term stays positive (1 byte per row, linear in the micro-batch like the rest) so
  // that the peak still sees a checkpointed run.
  const double rebuilt = n * block + 2 * n * h * e + n * 4 * 8192 - 4 * n * V;  // down_proj's fp32 input copy
  EXPECT_LT(rebuilt, 0);
  EXPECT_EQ(m.recompute_bytes, b);
}

TEST(HfAnalyticsTest, CheckpointedPeakIsTheLargerOfLossAndRebuiltBlock) {
  // Per token the rebuilt block (+ gradient buffers - 4V) is compared with the loss's 8V: eager
  // attention's s-long score rows on a small vocabulary take the second branch, SDPA the first.
  HardwareModel hw;
  hw.value("workspace_bytes") = 0;
  hw.value("saved_scale") = hw.value("logits_scale") = hw.value("reserved_scale") = 1;
  for (AttnImpl attn : {AttnImpl::sdpa, AttnImpl::eager}) {
    Workload w = hf("tiny", true, 0.0, 512);
    w.stack.attn_impl = attn;
    w.train.grad_ckpt = true;
    const double n = 2 * 512, V = 512, h = 64, e = 2, block = hf_block_saved_per_token(w, false);
    const Features f = features(w, 2);
    const double rebuilt = f.saved_bytes - 4 * n * V + n * block + 2 * n * h * e + n * rebuilt_cast_bytes(w);
    const double loss = f.saved_bytes + 8 * n * V;
    EXPECT_EQ(peak_memory(f, stack_model(hw, StackKind::lorasim)).peak_allocated_bytes, f.static_bytes + std::max(loss, rebuilt))
        << attn_impl_name(attn);
    EXPECT_EQ(rebuilt > loss, attn == AttnImpl::eager) << attn_impl_name(attn);
  }
}

TEST(HfAnalyticsTest, TheRebuiltBlockHoldsTheLastAdaptedInputsFp32CopyUnderAutocastOnly) {
  // qwen3-1.7b: i = 6144, h = 2048. All seven adapted: down_proj's input, 4 i bytes a token.
  Workload w = hf("qwen3-1.7b", true, 0.0);
  EXPECT_EQ(rebuilt_cast_bytes(w), 4.0 * 6144);
  // q and v alone: v's input, the hidden state.
  w.lora.targets = {Target::q, Target::v};
  EXPECT_EQ(rebuilt_cast_bytes(w), 4.0 * 2048);
  // Without autocast lora_A saves the fp32 copy itself (counted in the block); adapters in the
  // compute precision need no copy; an fp32 model has nothing to cast.
  EXPECT_EQ(rebuilt_cast_bytes(hf("qwen3-1.7b", false, 0.0)), 0.0);
  Workload same = hf("qwen3-1.7b", true, 0.0);
  same.train.adapters_in_compute_precision = true;
  EXPECT_EQ(rebuilt_cast_bytes(same), 0.0);
  Workload fp32 = hf("qwen3-1.7b", true, 0.0);
  fp32.train.precision = Precision::fp32;
  EXPECT_EQ(rebuilt_cast_bytes(fp32), 0.0);
  // It goes into the checkpointed rebuilt block, n tokens at a time, and nowhere else.
  Workload ckpt = hf("qwen3-1.7b", true, 0.0, 1024);
  ckpt.train.grad_ckpt = true;
  ckpt.stack.fused_lm_head = true;
  const ActivationMemory m = hf_activation_memory(ckpt, 16);
  Workload off = ckpt;
  off.stack.autocast = false;
  const double n = 16 * 1024, e = 2, h = 2048;
  EXPECT_DOUBLE_EQ(m.recompute_bytes, n * (hf_block_saved_per_token(ckpt, false) + 2 * h * e + 4 * 6144));
  EXPECT_DOUBLE_EQ(hf_activation_memory(off, 16).recompute_bytes, n * (hf_block_saved_per_token(off, false) + 2 * h * e));
}

TEST(HfAnalyticsTest, ExtraStaticIsAutocastsHalfCopiesOfTheAdapters) {
  const Workload on = hf("qwen3-1.7b", true, 0.0), off = hf("qwen3-1.7b", false, 0.0);
  EXPECT_EQ(hf_extra_static_bytes(on), 2.0 * 17'432'576);
  EXPECT_EQ(hf_extra_static_bytes(off), 0.0);
}

// The doc's check against the H200 measurement: qwen3-1.7b, 16 x 512 tokens, no
// checkpointing, measured 42.0 GiB allocated with autocast and 49.9 GiB without.
TEST(HfAnalyticsTest, Qwen3_1_7bHeadlinePeakIs41_99GiBWithAutocastAnd49_88Without) {
  HardwareModel hw;  // the counts as they stand: every scale 1, no workspace, no slack
  hw.value("saved_scale") = hw.value("logits_scale") = hw.value("reserved_scale") = 1;
  hw.value("workspace_bytes") = hw.value("reserved_overhead_bytes") = 0;
  const auto peak_gib = [&](bool autocast) {
    const Workload w = hf("qwen3-1.7b", autocast, 0.0, 512);
    const Features f = features(w, 16);
    // static = bf16 weights + fp32 adapters, gradients, AdamW moments (+ autocast's half copies).
    const ParamCounts pc = count_params(w.arch, w.lora);
    EXPECT_EQ(f.static_bytes, 2.0 * pc.base + 16.0 * pc.trainable + hf_extra_static_bytes(w));
    const double by_hand = f.static_bytes + f.saved_bytes + f.logits_bytes;
    EXPECT_EQ(peak_memory(f, stack_model(hw, StackKind::lorasim)).peak_allocated_bytes, by_hand);
    return by_hand / kGiB;
  };
  EXPECT_NEAR(peak_gib(true), 41.99, 0.005);
  EXPECT_NEAR(peak_gib(false), 49.88, 0.005);
}

TEST(HfAnalyticsTest, LorasimStackKeepsTheRunnersCounts) {
  // features() dispatches on the stack: the same workload on lorasim's runner uses analytics.h.
  Workload w = hf("qwen3-1.7b", false, 0.0);
  w.stack = StackSpec::lorasim_runner();
  const Features f = features(w, 2);
  EXPECT_EQ(f.saved_bytes, activation_memory(w, 2).saved_bytes);
  EXPECT_EQ(f.static_bytes, static_cast<double>(static_memory(w).total()));
  EXPECT_EQ(f.host_ops, host_ops_per_micro_batch(w));
}

TEST(HfAnalyticsTest, HfOperatorCountsAddPeftsCastsPerAdapter) {
  const Workload w = hf("tiny", true, 0.0, 32);
  Workload d = w;
  d.stack.lora_dropout = 0.1;
  // 2 forward operators per adapter (the casts), 3 with dropout, times (forward + 1.5 backward).
  EXPECT_EQ(hf_host_ops_per_micro_batch(w) - host_ops_per_micro_batch(w), 7 * 2 * 2 * 2.5);
  EXPECT_EQ(hf_host_ops_per_micro_batch(d) - host_ops_per_micro_batch(d), 7 * 3 * 2 * 2.5);
  EXPECT_EQ(hf_recompute_ops_per_micro_batch(w), 0.0);
}

TEST(HfAnalyticsTest, EagerAttentionDispatchesWhatSdpaFuses) {
  // 13 forward operators per layer more under eager attention, 2 more with soft-capping, times
  // (forward + 1.5 backward), and once more in the recompute under checkpointing.
  Workload w = hf("tiny", true, 0.0, 32);
  Workload e = w;
  e.stack.attn_impl = AttnImpl::eager;
  const double layers = static_cast<double>(w.arch.num_layers);
  EXPECT_EQ(hf_host_ops_per_micro_batch(e) - hf_host_ops_per_micro_batch(w), 13 * 2.5 * layers);
  Workload c = e;
  c.arch.attn_logit_softcap = 50;
  EXPECT_EQ(hf_host_ops_per_micro_batch(c) - hf_host_ops_per_micro_batch(w), 15 * 2.5 * layers);
  w.train.grad_ckpt = e.train.grad_ckpt = true;
  EXPECT_EQ(hf_host_ops_per_micro_batch(e) - hf_host_ops_per_micro_batch(w), 13 * 3.5 * layers);
  EXPECT_EQ(hf_recompute_ops_per_micro_batch(e) - hf_recompute_ops_per_micro_batch(w), 13 * layers);
}
