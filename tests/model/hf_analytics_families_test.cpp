// The hf-peft counts of Gemma 2 and Phi-3 worked by hand (the formulas were measured to the byte on
// the CPU by tests/python/test_saved_tensors_archs.py): saved bytes per token per block, the
// micro-batch total with Gemma 2's soft-capped logits, and attention FLOPs of local layers.
#include <gtest/gtest.h>

#include <string>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/hf_analytics.h"

using namespace lorasim::model;

namespace {

Workload hf(const std::string& name, AttnImpl attn, int64_t seq_len) {
  Workload w;
  w.arch = preset(name);
  w.train.seq_len = seq_len;
  w.train.precision = Precision::bf16;
  w.stack.kind = StackKind::hf_peft;
  w.stack.attn_impl = attn;
  w.stack.autocast = true;
  w.validate();
  return w;
}

// gemma-2-2b, bf16 under autocast, r = 16 on all seven, 512 tokens (inside the 4096 window):
//   four norms       4 x (4 x 2304 + 4)                          = 36,880
//   adapters         2 x (5 x 2304 + 2048 + 9216 + 7 x 16)        = 45,792
//   sdpa             2 x (2 x 2048 + 2 x 1024) + 4 x 8            = 12,320
//   GeGLU            3 x 9216 x 2                                 = 55,296
TEST(HfAnalyticsFamiliesTest, Gemma2BlockSavesFourNormsAndGeGlu) {
  const Workload w = hf("gemma-2-2b", AttnImpl::sdpa, 512);
  EXPECT_EQ(hf_block_saved_per_token(w, false), 150288);
  EXPECT_EQ(hf_block_saved_per_token(w, true), 150288 - 9220);  // block 0's input norm saves nothing
  for (int64_t l = 0; l < 26; ++l) EXPECT_EQ(hf_layer_saved_per_token(w, l, false), 150288) << l;
}

// Eager: q and k repeated to 8 heads 2 x 3 x 2048, softmax's fp32 output and its bf16 copy
// 8 x 512 x 6, and the score soft-cap's tanh output 8 x 512 x 2.
TEST(HfAnalyticsFamiliesTest, Gemma2EagerSavesTheScoreSoftCapsTanh) {
  const Workload w = hf("gemma-2-2b", AttnImpl::eager, 512);
  EXPECT_EQ(hf_block_saved_per_token(w, false), 36880 + 45792 + 12288 + 24576 + 8192 + 55296);
}

// From 4096 tokens the local layers' window no longer covers the sequence: sdpa gets a mask, so
// k and v are repeated (2 x 2 x 2048 x 2) and the mask's bf16 bias is saved (4096 x 2).
TEST(HfAnalyticsFamiliesTest, Gemma2LocalLayersBeyondTheWindowSaveRepeatedKvAndTheMask) {
  const Workload w = hf("gemma-2-2b", AttnImpl::sdpa, 4096);
  const double global = 36880 + 45792 + 12320 + 55296;
  EXPECT_EQ(hf_layer_saved_per_token(w, 1, false), global);
  EXPECT_EQ(hf_layer_saved_per_token(w, 0, false), global - 12320 + (16384 + 32) + 8192);
  EXPECT_EQ(hf_layer_saved_per_token(hf("gemma-2-2b", AttnImpl::sdpa, 4095), 0, false), global);
}

// Without checkpointing, one sequence of 512: 25 blocks + block 0 + the final norm (9,220),
// log-softmax's fp32 output (4 x 256,000), the labels (8) and the logit soft-cap's tanh output
// (2 x 256,000).
TEST(HfAnalyticsFamiliesTest, Gemma2MicroBatchIncludesTheLogitSoftCapsTanh) {
  const Workload w = hf("gemma-2-2b", AttnImpl::sdpa, 512);
  const ActivationMemory m = hf_activation_memory(w, 1);
  EXPECT_EQ(m.saved_bytes, 512.0 * (25 * 150288 + 141068 + 9220 + 1024000 + 8 + 512000));
  EXPECT_EQ(m.saved_bytes, 2787069952.0);
}

// With checkpointing: every block's input (26 x 2304 x 2) and the same outer tensors
// (tests/python/test_saved_tensors_archs.py measures this formula on tiny shapes).
TEST(HfAnalyticsFamiliesTest, Gemma2CheckpointedKeepsBlockInputsAndTheSoftCapsTanh) {
  Workload w = hf("gemma-2-2b", AttnImpl::sdpa, 512);
  w.train.grad_ckpt = true;
  const ActivationMemory m = hf_activation_memory(w, 1);
  EXPECT_EQ(m.saved_bytes, 512.0 * (26 * 2304 * 2 + 9220 + 1024000 + 8 + 512000));
  // The rebuilt block (150,288 + its 2 x 2304 x 2 gradient buffers a token) comes after the loss's
  // log-softmax output and tanh output (1,536,000 a token) are freed: nothing beyond saved_bytes.
  EXPECT_EQ(m.recompute_bytes, 1.0);
}

// phi-3-mini, bf16 under autocast, r = 16 on its four modules, 512 tokens:
//   two norms        2 x (4 x 3072 + 4)                           = 24,584
//   adapters         2 x (3072 + 3072 + 3072 + 8192 + 4 x 16)     = 34,944
//   sdpa             2 x (4 x 3072) + 4 x 32, and v's view keeping
//                    the 9216-wide qkv output: 2 x (3072 + 3072)   = 36,992
//   SwiGLU           3 x 8192 x 2 (gate and up: halves of one)     = 49,152
TEST(HfAnalyticsFamiliesTest, Phi3BlockSavesOneAdapterPerFusedModuleAndTheQkvOutput) {
  const Workload w = hf("phi-3-mini", AttnImpl::sdpa, 512);
  EXPECT_EQ(hf_block_saved_per_token(w, false), 145672);
  // Eager saves a contiguous copy of v: no fused output kept; q, k (no GQA) and softmax.
  EXPECT_EQ(hf_block_saved_per_token(hf("phi-3-mini", AttnImpl::eager, 512), false),
            24584 + 34944 + 2 * 3 * 3072 + 32 * 512 * 6 + 49152);
}

// Attention FLOPs, b = 1, 8192 tokens, no checkpointing: 3 x 4 x H x s x keys x d per layer.
// flash-attn skips what a local layer's window leaves out; sdpa and eager compute every key.
TEST(HfAnalyticsFamiliesTest, LocalLayersAttendToTheWindowUnderFlashAttentionOnly) {
  Workload w = hf("gemma-2-2b", AttnImpl::sdpa, 8192);
  const double per_key = 3.0 * 4 * 8 * 8192 * 256;
  EXPECT_EQ(flops_per_micro_batch(w, 1).attention, per_key * 26 * 8192);
  w.stack.attn_impl = AttnImpl::flash_attention_2;
  EXPECT_EQ(flops_per_micro_batch(w, 1).attention, per_key * (13 * 8192 + 13 * 4096));
  w.train.seq_len = 4096;  // the window covers the sequence: nothing skipped
  EXPECT_EQ(flops_per_micro_batch(w, 1).attention, 3.0 * 4 * 8 * 4096 * 256 * 26 * 4096);
}

// Phi-3's frozen GEMMs are the same matmuls as separate q/k/v and gate/up.
TEST(HfAnalyticsFamiliesTest, Phi3FrozenGemmFlopsEqualTheUnfusedOnes) {
  Workload w = hf("phi-3-mini", AttnImpl::sdpa, 512);
  const double fused = flops_per_micro_batch(w, 2).gemm;
  w.arch.fused_qkv = w.arch.fused_gate_up = false;
  EXPECT_EQ(flops_per_micro_batch(w, 2).gemm, fused);
  EXPECT_EQ(fused, 32.0 * 4 * 1024 * 113246208);  // 2 x 2 passes x tokens x per-layer weights
}

}  // namespace

namespace {

// The loss's traffic over gemma-2-2b's 256,000 logits per token: the Llama loss (2e + 36) plus the
// soft-cap's passes (6e forward, 7e backward), bf16.
TEST(HfAnalyticsFamiliesTest, TheLogitSoftCapAddsItsPassesToTheLossTraffic) {
  Workload w = hf("gemma-2-2b", AttnImpl::sdpa, 512);
  EXPECT_EQ(hf_loss_bytes(w, 2), 1024.0 * 256000 * (4 + 36 + 26));
  w.arch.final_logit_softcap = 0;
  EXPECT_EQ(hf_loss_bytes(w, 2), 1024.0 * 256000 * (4 + 36));
}

}  // namespace
