// Properties and exact identities of the cost model.
#include "model/cost_model.h"

#include <gtest/gtest.h>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/hf_analytics.h"
#include "model/training_stack.h"
#include "tests/model/test_hardware.h"

using namespace lorasim::model;
using lorasim::testing::test_gpu;

namespace {
Workload qwen(int64_t seq_len = 512) {
  Workload w;
  w.arch = preset("qwen3-1.7b");
  w.train.seq_len = seq_len;
  return w;
}
}  // namespace

TEST(CostModelTest, StepSumsHostAndDeviceOverMicroBatchesAndOptimizer) {
  const CostModel cm(qwen(), test_gpu());
  for (int64_t a : {1, 2, 7}) {
    const StepTime s = cm.step(4, a);
    EXPECT_NEAR(s.host_s, cm.micro_batch(4).host_s + (a - 1) * cm.micro_batch(4, true).host_s + cm.optimizer().host_s,
                1e-15);
    EXPECT_NEAR(s.device_s,
                cm.micro_batch(4).device_s + (a - 1) * cm.micro_batch(4, true).device_s + cm.optimizer().device_s,
                1e-15);
    EXPECT_DOUBLE_EQ(s.total_s, std::max(s.host_s, s.device_s));  // overlap_loss is 0
  }
}

namespace {
// Round numbers for every regressor and coefficient, so each term is known by hand.
Features round_features() {
  Features f;
  f.host_ops = 1000;
  f.recompute_ops = 200;
  f.gemm_flops = 1e12;
  f.gemm_flops_per_token = 1e6;
  f.head_flops = 1e12;
  f.attention_flops = 1e11;
  f.memory_bytes = 1e9;
  f.loss_bytes = 2e9;
  f.lora_tensors = 100;
  f.trainable_params = 1e6;
  return f;
}
HardwareModel round_gpu() {
  HardwareModel hw = test_gpu();
  hw.value("host_fixed_s") = 1e-3;
  hw.value("host_per_op_s") = 1e-5;
  hw.value("recompute_host_share") = 0.5;
  hw.value("device_fixed_s") = 1e-4;
  hw.value("gemm_tflops") = 100;
  hw.value("gemm_half_tokens") = 1e6;
  hw.value("head_tflops") = 500;
  hw.value("attention_tflops") = 100;
  hw.value("memory_gbps") = 1000;
  hw.value("loss_gbps") = 1000;
  hw.value("per_kernel_s") = 1e-6;
  return hw;
}
}  // namespace

TEST(CostModelTest, MicroBatchTimeOfKnownCoefficients) {
  const MicroBatchTime t = micro_batch_time(round_features(), lorasim::testing::runner(round_gpu()), Precision::bf16);
  EXPECT_NEAR(t.host_s, 1e-3 + 1e-5 * (1000 - 0.5 * 200), 1e-15);  // 10 ms
  // fixed 0.1 ms, GEMMs (1e12 + 1e6 * 1e6) / 100e12 = 20 ms, head 2 ms, attention 1 ms,
  // blocks' traffic 1 ms, loss 2 ms, per-kernel floor 1 ms.
  EXPECT_NEAR(t.device_s, 0.0271, 1e-15);
  EXPECT_NEAR(t.total_s, 0.0271, 1e-15);
  // fp32 at 60 of the bf16 peak's 1000 TFLOP/s: the FLOP terms take 1000/60 as long, the traffic not.
  const MicroBatchTime fp32 = micro_batch_time(round_features(), lorasim::testing::runner(round_gpu()), Precision::fp32);
  EXPECT_NEAR(fp32.device_s, 1e-4 + 0.023 * 1000 / 60 + 0.003 + 0.001, 1e-14);
}

TEST(CostModelTest, HostBoundStepIsTheHostsTimeAndDeviceBoundTheDevices) {
  HardwareModel hw = test_gpu();
  const Workload w = qwen();
  hw.value("host_fixed_s") = 10;  // far above any device time
  const StepTime host = CostModel(w, hw).step(4, 2);
  EXPECT_TRUE(host.host_bound);
  EXPECT_GT(host.total_s, 20);
  EXPECT_DOUBLE_EQ(host.total_s, host.host_s);
  hw.value("host_fixed_s") = 0;
  hw.value("host_per_op_s") = 0;
  hw.value("optimizer_fixed_s") = hw.value("optimizer_per_tensor_s") = 0;
  const StepTime device = CostModel(w, hw).step(4, 2);
  EXPECT_FALSE(device.host_bound);
  EXPECT_EQ(device.host_s, 0);
  EXPECT_DOUBLE_EQ(device.total_s, device.device_s);
}

namespace {
Workload hf_qwen() {
  Workload w = qwen();
  w.stack.kind = StackKind::hf_peft;
  return w;
}
}  // namespace

TEST(CostModelTest, ZeroSpreadsMakeARangeOfOnePoint) {
  HardwareModel hw = test_gpu();
  hw.value("host_spread", lorasim::model::StackKind::hf_peft) = hw.value("device_spread", lorasim::model::StackKind::hf_peft) = 0;
  // The range combines as the step does, overlap loss included (hf-peft's own row).
  hw.value("overlap_loss", lorasim::model::StackKind::hf_peft) = 0.25;
  for (int64_t b : {1, 4, 16}) {
    const StepTime s = CostModel(hf_qwen(), hw).step(b, 16 / b);
    EXPECT_EQ(s.low_s, s.total_s);
    EXPECT_EQ(s.high_s, s.total_s);
  }
  // The lorasim stack's spreads are the profile's expected error.
  hw.value("expected_time_error") = 0;
  const StepTime s = CostModel(qwen(), hw).step(2, 8);
  EXPECT_EQ(s.low_s, s.total_s);
  EXPECT_EQ(s.high_s, s.total_s);
}

TEST(CostModelTest, HostBoundRangeIsTheHostsTimeOffByItsSpread) {
  HardwareModel hw = test_gpu();
  hw.value("host_fixed_s", lorasim::model::StackKind::hf_peft) = 1;  // far above any device time, and above it at any spread
  hw.value("host_spread", lorasim::model::StackKind::hf_peft) = 0.2;
  hw.value("device_spread", lorasim::model::StackKind::hf_peft) = 0.1;
  const StepTime s = CostModel(hf_qwen(), hw).step(4, 2);
  ASSERT_TRUE(s.host_bound);
  ASSERT_GT(s.host_s * 0.8, s.device_s * 1.1);
  EXPECT_EQ(s.total_s, s.host_s);
  EXPECT_EQ(s.low_s, s.host_s * (1 - 0.2));
  EXPECT_EQ(s.high_s, s.host_s * (1 + 0.2));
}

TEST(CostModelTest, DeviceBoundRangeIsTheDevicesTimeOffByItsSpread) {
  HardwareModel hw = test_gpu();
  hw.value("host_fixed_s", lorasim::model::StackKind::hf_peft) = hw.value("host_per_op_s", lorasim::model::StackKind::hf_peft) = 0;
  hw.value("optimizer_fixed_s", lorasim::model::StackKind::hf_peft) = hw.value("optimizer_per_tensor_s", lorasim::model::StackKind::hf_peft) = 0;
  hw.value("host_spread", lorasim::model::StackKind::hf_peft) = 0.2;
  hw.value("device_spread", lorasim::model::StackKind::hf_peft) = 0.1;
  const StepTime s = CostModel(hf_qwen(), hw).step(4, 2);
  ASSERT_FALSE(s.host_bound);
  EXPECT_EQ(s.low_s, s.device_s * (1 - 0.1));
  EXPECT_EQ(s.high_s, s.device_s * (1 + 0.1));
}

TEST(CostModelTest, RangeOfASynchronousDeviceAddsBothSidesBounds) {
  HardwareModel hw = test_gpu();
  hw.overlap = Overlap::sum;
  hw.value("expected_time_error") = 0.3;
  const StepTime s = CostModel(qwen(), hw).step(2, 3);
  EXPECT_DOUBLE_EQ(s.low_s, 0.7 * s.host_s + 0.7 * s.device_s);
  EXPECT_DOUBLE_EQ(s.high_s, 1.3 * s.host_s + 1.3 * s.device_s);
  EXPECT_LT(s.low_s, s.total_s);
  EXPECT_GT(s.high_s, s.total_s);
}

TEST(CostModelTest, SynchronousDeviceAddsHostAndDevice) {
  HardwareModel hw = test_gpu();
  hw.overlap = Overlap::sum;
  const StepTime s = CostModel(qwen(), hw).step(2, 3);
  EXPECT_DOUBLE_EQ(s.total_s, s.host_s + s.device_s);
}

TEST(CostModelTest, AccumulatingMicroBatchDispatchesOneAddPerAdapterTensor) {
  const Workload w = qwen();
  HardwareModel hw = test_gpu();
  const CostModel cm(w, hw);
  const double extra = cm.micro_batch(1, true).host_s - cm.micro_batch(1).host_s;
  EXPECT_NEAR(extra, hw.value("host_per_op_s") * count_params(w.arch, w.lora).lora_tensors, 1e-15);
}

TEST(CostModelTest, OverlapLossAppliesOnlyBeyondTheLaunchQueue) {
  HardwareModel hw = test_gpu();
  hw.value("overlap_loss") = 0.25;
  hw.value("launch_queue_ops") = 1000;
  EXPECT_DOUBLE_EQ(overlap_share(800, resolve(hw, StackKind::lorasim)), 0.0);
  EXPECT_DOUBLE_EQ(overlap_share(4000, resolve(hw, StackKind::lorasim)), 0.75);
  const Features f = features(qwen(), 2);  // 28 layers: thousands of operators
  const MicroBatchTime t = micro_batch_time(f, lorasim::testing::runner(hw), Precision::bf16);
  const double share = 1 - 1000 / f.host_ops;
  EXPECT_DOUBLE_EQ(t.total_s, std::max(t.host_s, t.device_s) + 0.25 * share * std::min(t.host_s, t.device_s));
}

TEST(CostModelTest, OptimizerHostAndDeviceParts) {
  HardwareModel hw = test_gpu();
  hw.value("optimizer_fixed_s") = 1e-3;
  hw.value("optimizer_per_tensor_s") = 50e-6;
  hw.value("optimizer_device_per_tensor_s") = 20e-6;
  hw.value("optimizer_per_param_s") = 1e-12;
  Features f;
  f.lora_tensors = 100;
  f.trainable_params = 1'000'000;
  const OptimizerTime o = optimizer_time(f, lorasim::testing::runner(hw));
  EXPECT_DOUBLE_EQ(o.host_s, 1e-3 + 100 * 50e-6);
  EXPECT_DOUBLE_EQ(o.device_s, 100 * 20e-6 + 1e6 * 1e-12);
}

TEST(CostModelTest, StepTimeGrowsWithAccumulation) {
  const CostModel cm(qwen(), test_gpu());
  for (int64_t b : {1, 4, 16})
    for (int64_t a = 1; a < 10; ++a) EXPECT_GT(cm.step_time_s(b, a + 1), cm.step_time_s(b, a));
}

TEST(CostModelTest, PeakMemoryGrowsWithMicroBatch) {
  const CostModel cm(qwen(), test_gpu());
  for (int64_t b = 1; b < 32; ++b) {
    EXPECT_GT(cm.memory(b + 1).peak_allocated_bytes, cm.memory(b).peak_allocated_bytes);
    EXPECT_GT(cm.memory(b + 1).peak_reserved_bytes, cm.memory(b).peak_reserved_bytes);
  }
}

TEST(CostModelTest, ReservedIsNeverBelowAllocated) {
  HardwareModel hw = test_gpu();
  hw.value("reserved_scale") = 0.5;  // a bad fit must not predict reserved < allocated
  const CostModel cm(qwen(), hw);
  EXPECT_GE(cm.memory(8).peak_reserved_bytes, cm.memory(8).peak_allocated_bytes);
}

TEST(CostModelTest, AllocatedPeakIsStaticPlusScaledActivations) {
  HardwareModel hw = test_gpu();
  hw.value("saved_scale") = 1.25;
  hw.value("logits_scale") = 0.75;
  const Workload w = qwen();
  const CostModel cm(w, hw);
  const ActivationMemory act = activation_memory(w, 3);
  const double expected = static_cast<double>(static_memory(w).total()) + hw.value("workspace_bytes") +
                          1.25 * act.saved_bytes + 0.75 * act.logits_bytes;
  EXPECT_DOUBLE_EQ(cm.memory(3).peak_allocated_bytes, expected);
}

TEST(CostModelTest, CheckpointedPeakHoldsTheLossBuffersOrTheRebuiltBlock) {
  HardwareModel hw = test_gpu();
  hw.value("saved_scale") = 1.25;
  hw.value("logits_scale") = 0.75;
  Workload w = qwen();
  w.train.grad_ckpt = true;
  const ActivationMemory act = activation_memory(w, 3);
  const double base = static_cast<double>(static_memory(w).total()) + hw.value("workspace_bytes") +
                      1.25 * act.saved_bytes;
  // A 151936-token vocabulary: the loss's buffers are far larger than one block.
  ASSERT_GT(0.75 * act.logits_bytes, 1.25 * act.recompute_bytes);
  EXPECT_DOUBLE_EQ(CostModel(w, hw).memory(3).peak_allocated_bytes, base + 0.75 * act.logits_bytes);
  // Scale the logits down until the rebuilt block is the larger: then it sets the peak.
  hw.value("logits_scale") = 1e-3;
  EXPECT_DOUBLE_EQ(CostModel(w, hw).memory(3).peak_allocated_bytes, base + 1.25 * act.recompute_bytes);
}

TEST(CostModelTest, WorstReservedAddsTheMarginOfTheVariableMemoryAndTheStacksBytes) {
  // The runner: its expected memory error of what is not weights and optimizer state, no bytes.
  HardwareModel hw = test_gpu();
  hw.value("expected_memory_error") = 0.25;
  Workload w = qwen();
  const MemoryEstimate m = CostModel(w, hw).memory(4);
  const double runner_static = static_cast<double>(static_memory(w).total());
  EXPECT_EQ(m.variable_bytes, m.peak_reserved_bytes - runner_static);
  EXPECT_DOUBLE_EQ(m.worst_reserved_bytes, m.peak_reserved_bytes + 0.25 * (m.peak_reserved_bytes - runner_static));
  // hf-peft: its measured 4% of the variable memory and 256 MiB whatever the micro-batch, 10% with
  // checkpointing, LoRA dropout or no autocast; the static part (with the stack's own extra
  // static bytes) adds nothing.
  w.stack = training_stack(StackKind::hf_peft).default_spec();
  const double hf_static = runner_static + hf_extra_static_bytes(w);
  Workload ckpt = w, dropout = w, plain = w;
  ckpt.train.grad_ckpt = true;
  dropout.stack.lora_dropout = 0.05;
  plain.stack.autocast = false;
  for (const auto& [workload, share] : {std::pair<Workload, double>{w, 0.04}, {ckpt, 0.10}, {dropout, 0.10}, {plain, 0.10}})
    for (int64_t b : {1, 4, 16}) {
      const MemoryEstimate h = CostModel(workload, hw).memory(b);
      const double stat = runner_static + hf_extra_static_bytes(workload);
      EXPECT_DOUBLE_EQ(h.variable_bytes, h.peak_reserved_bytes - stat) << b;
      EXPECT_DOUBLE_EQ(h.worst_reserved_bytes, h.peak_reserved_bytes + share * (h.peak_reserved_bytes - stat) + 268435456.0)
          << b << " share " << share;
    }
  EXPECT_GT(hf_static, runner_static);
}

TEST(CostModelTest, RecomputingForwardCostsItsShareOfHostTime) {
  HardwareModel hw = test_gpu();
  Workload w = qwen();
  w.train.grad_ckpt = true;
  const double ops = host_ops_per_micro_batch(w), rops = recompute_ops_per_micro_batch(w);
  ASSERT_GT(rops, 0);
  for (double k : {1.0, 0.5, 0.0}) {
    hw.value("recompute_host_share") = k;
    EXPECT_NEAR(CostModel(w, hw).micro_batch(2).host_s,
                hw.value("host_fixed_s") + hw.value("host_per_op_s") * (ops - (1 - k) * rops), 1e-15)
        << "share " << k;
  }
  // Without checkpointing the share changes nothing.
  w.train.grad_ckpt = false;
  const double plain = CostModel(w, hw).micro_batch(2).host_s;
  hw.value("recompute_host_share") = 1;
  EXPECT_DOUBLE_EQ(CostModel(w, hw).micro_batch(2).host_s, plain);
}

TEST(CostModelTest, AsynchronousDeviceTakesTheSlowerOfHostAndDevice) {
  const Features f = features(qwen(), 2);
  HardwareModel hw = test_gpu();
  const MicroBatchTime t = micro_batch_time(f, lorasim::testing::runner(hw), Precision::bf16);
  EXPECT_DOUBLE_EQ(t.total_s, std::max(t.host_s, t.device_s));
  hw.overlap = Overlap::sum;
  const MicroBatchTime s = micro_batch_time(f, lorasim::testing::runner(hw), Precision::bf16);
  EXPECT_DOUBLE_EQ(s.total_s, s.host_s + s.device_s);
}

TEST(CostModelTest, HostTimeDoesNotDependOnMicroBatch) {
  const CostModel cm(qwen(), test_gpu());
  EXPECT_DOUBLE_EQ(cm.micro_batch(1).host_s, cm.micro_batch(64).host_s);
  EXPECT_LT(cm.micro_batch(1).device_s, cm.micro_batch(64).device_s);
}

// A device whose only cost is the blocks' GEMMs, at 100 TFLOP/s.
HardwareModel gemm_only_gpu() {
  HardwareModel hw = test_gpu();
  for (const Coefficient& c : coefficient_table())
    if (c.owned_by(StackKind::lorasim) && c.in(StackKind::lorasim).section == std::string("time"))
      hw.value(c, StackKind::lorasim) = c.in(StackKind::lorasim).prior;
  hw.value("gemm_tflops") = 100;
  hw.value("head_tflops") = 1e30;
  hw.value("attention_tflops") = 1e30;
  hw.value("memory_gbps") = 1e30;
  hw.value("loss_gbps") = 1e30;
  return hw;
}

TEST(CostModelTest, HockneyTermIsAFixedCostPerGemm) {
  // With n_half = 0 the GEMM time is exactly FLOPs / rate.
  HardwareModel hw = gemm_only_gpu();
  const Features f = features(qwen(), 4);
  EXPECT_NEAR(micro_batch_time(f, lorasim::testing::runner(hw), Precision::bf16).device_s, f.gemm_flops / 100e12, 1e-12);
  hw.value("gemm_half_tokens") = 2048;  // = b * s: the rate halves, the time doubles
  EXPECT_NEAR(micro_batch_time(f, lorasim::testing::runner(hw), Precision::bf16).device_s, 2 * f.gemm_flops / 100e12, 1e-12);
}

TEST(CostModelTest, OtherPrecisionScalesRatesByDatasheetRatio) {
  HardwareModel hw = gemm_only_gpu();
  const Features f = features(qwen(), 4);
  const double bf16 = micro_batch_time(f, lorasim::testing::runner(hw), Precision::bf16).device_s;
  const double fp32 = micro_batch_time(f, lorasim::testing::runner(hw), Precision::fp32).device_s;
  EXPECT_NEAR(fp32 / bf16, 1000.0 / 60.0, 1e-9);
}

// The reserved line of the hf-peft stack: a quantized base under TRL's fused LM head takes its
// slack from its saved activations (reserved_quant_fused_share), every other workload from its
// logits buffers (reserved_logits_share). Round numbers, worked by hand.
TEST(CostModelTest, QuantizedBaseUnderTheFusedHeadTakesItsSlackFromTheSavedActivations) {
  StackModel m;
  m.stack = StackKind::hf_peft;
  m.c.saved_scale = 1;
  m.c.logits_scale = 1;
  m.c.reserved_scale = 1;
  m.c.reserved_overhead_bytes = 50;
  m.c.reserved_logits_share = 1.5;
  m.c.reserved_quant_fused_share = 0.25;
  Features f;
  f.static_bytes = 1000;
  f.saved_bytes = 400;
  f.logits_bytes = 100;
  f.logits_buffer_bytes = 80;
  f.fused_head_tokens = 8;
  // A float base under the fused head: allocated 1000 + 400 + 100 = 1500; reserved 1500 + 50 +
  // 1.5 x 80 = 1670.
  EXPECT_DOUBLE_EQ(peak_memory(f, m).peak_allocated_bytes, 1500);
  EXPECT_DOUBLE_EQ(peak_memory(f, m).peak_reserved_bytes, 1670);
  // A quantized base: 1500 + 50 + 0.25 x 400 = 1650; the logits buffers are not counted twice.
  f.dequant_weight_bytes = 1;
  EXPECT_DOUBLE_EQ(peak_memory(f, m).peak_reserved_bytes, 1650);
  // A quantized base with Transformers' loss (no fused head): the logits share again.
  f.fused_head_tokens = 0;
  EXPECT_DOUBLE_EQ(peak_memory(f, m).peak_reserved_bytes, 1670);
}

TEST(CostModelTest, TheWorstCasesOptionsAreCheckpointingDropoutNoAutocastAQuantizedBaseAndAnotherLoop) {
  Workload w = qwen();
  w.stack = training_stack(StackKind::hf_peft).default_spec();  // autocast, no dropout
  EXPECT_FALSE(runs_worst_case_options(w));
  Workload ckpt = w, dropout = w, plain = w, quant = w, lightning = w;
  ckpt.train.grad_ckpt = true;
  dropout.stack.lora_dropout = 0.05;
  plain.stack.autocast = false;
  quant.train.weight_format = WeightFormat::nf4;
  lightning.stack = training_stack(parse_stack("lightning")).default_spec();  // hf-peft's memory rows, its own loop
  for (const Workload& o : {ckpt, dropout, plain, quant, lightning}) EXPECT_TRUE(runs_worst_case_options(o));
  HardwareModel hw = test_gpu();
  const Coefficients c = resolve(hw, StackKind::hf_peft);
  EXPECT_EQ(worst_case_share(c, w), c.worst_case_margin);
  EXPECT_EQ(worst_case_share(c, quant), c.worst_case_margin + c.worst_case_margin_options);
}
