// The stack as part of the workload: names, validation, and what the coefficient table resolves
// for a workload of each stack (model/hardware.h's resolve).
#include "model/stack.h"

#include <gtest/gtest.h>

#include "model/coefficients.h"
#include "model/error.h"
#include "model/hardware.h"
#include "tests/model/test_hardware.h"

using namespace lorasim::model;
using lorasim::InputError;

namespace {

StackSpec hf_peft() {
  StackSpec s;
  s.kind = StackKind::hf_peft;
  return s;
}

constexpr StackKind kHf = StackKind::hf_peft;

HardwareModel gpu_with_stack_terms() {
  HardwareModel hw = lorasim::testing::test_gpu();
  auto t = [&](const char* name) -> double& { return hw.value(name, kHf); };
  t("host_fixed_s") = 2e-3;
  t("host_per_op_s") = 9e-5;
  t("recompute_host_share") = 1.7;
  t("device_scale") = 1.15;
  t("head_device_scale") = 1.4;
  t("optimizer_fixed_s") = 3e-3;
  t("optimizer_per_tensor_s") = 6e-5;
  t("saved_scale") = 1.02;
  t("logits_scale") = 0.97;
  t("workspace_bytes") = 3e8;
  t("reserved_overhead_bytes") = 5e8;
  t("reserved_activation_share") = 0.06;
  t("reserved_logits_share") = 0.8;
  t("expected_time_error") = 0.7;
  t("expected_memory_error") = 0.04;
  t("host_spread") = 0.3;
  t("device_spread") = 0.15;
  hw.origin(kHf).calibrated = true;
  return hw;
}

}  // namespace

TEST(StackTest, NamesRoundTripThroughTheirParsers) {
  for (StackKind k : {StackKind::hf_peft, StackKind::lorasim}) EXPECT_EQ(parse_stack(stack_name(k)), k);
  for (AttnImpl a : {AttnImpl::sdpa, AttnImpl::eager, AttnImpl::flash_attention_2})
    EXPECT_EQ(parse_attn_impl(attn_impl_name(a)), a);
  for (AllocatorMode m : {AllocatorMode::default_segments, AllocatorMode::expandable})
    EXPECT_EQ(parse_allocator(allocator_name(m)), m);
  EXPECT_STREQ(stack_name(StackKind::hf_peft), "hf-peft");
  EXPECT_STREQ(allocator_name(AllocatorMode::default_segments), "default");
}

TEST(StackTest, ParsersAcceptTheDocumentedAliases) {
  EXPECT_EQ(parse_stack("hf"), StackKind::hf_peft);
  EXPECT_EQ(parse_attn_impl("flash-attention-2"), AttnImpl::flash_attention_2);
  EXPECT_EQ(parse_allocator("expandable_segments:True"), AllocatorMode::expandable);
}

TEST(StackTest, ParsersRefuseUnknownValuesNamingTheAllowedOnes) {
  try {
    parse_stack("trl");
    FAIL() << "accepted an unknown stack";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'trl'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hf-peft"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_attn_impl("flash"), InputError);
  EXPECT_THROW(parse_allocator("cudaMallocAsync"), InputError);
}

TEST(StackTest, DefaultSpecIsHfPeftWithPeftsDefaultsAndRunnerIsLorasim) {
  const StackSpec d;
  EXPECT_EQ(d.kind, StackKind::hf_peft);
  EXPECT_EQ(d.attn_impl, AttnImpl::sdpa);
  EXPECT_EQ(d.lora_dropout, 0.0);
  EXPECT_EQ(d.allocator, AllocatorMode::default_segments);
  EXPECT_TRUE(d.autocast);
  const StackSpec r = StackSpec::lorasim_runner();
  EXPECT_EQ(r.kind, StackKind::lorasim);
  EXPECT_EQ(r.allocator, AllocatorMode::expandable);
  EXPECT_FALSE(r.autocast);
  EXPECT_NO_THROW(r.validate());
  EXPECT_NO_THROW(d.validate());
}

TEST(StackTest, ValidateRefusesWhatTheLorasimRunnerDoesNotHave) {
  StackSpec s = StackSpec::lorasim_runner();
  s.lora_dropout = 0.05;
  EXPECT_THROW(s.validate(), InputError);
  s = StackSpec::lorasim_runner();
  s.autocast = true;
  EXPECT_THROW(s.validate(), InputError);
  s = StackSpec::lorasim_runner();
  s.attn_impl = AttnImpl::eager;
  try {
    s.validate();
    FAIL() << "accepted eager attention on the lorasim stack";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("eager"), std::string::npos) << e.what();
    // The library names the stack that has it; the CLI maps the quantity to --stack.
    EXPECT_NE(std::string(e.what()).find("the hf-peft stack"), std::string::npos) << e.what();
    EXPECT_EQ(e.quantity(), "stack");
  }
  // The same options are the hf-peft stack's own.
  StackSpec h = hf_peft();
  h.lora_dropout = 0.05;
  h.attn_impl = AttnImpl::eager;
  h.autocast = false;
  EXPECT_NO_THROW(h.validate());
}

TEST(StackTest, ValidateRefusesDropoutOutsideZeroToOne) {
  StackSpec s = hf_peft();
  for (double p : {1.0, -0.1, 1.5}) {
    s.lora_dropout = p;
    EXPECT_THROW(s.validate(), InputError) << p;
  }
  s.lora_dropout = 0.999;
  EXPECT_NO_THROW(s.validate());
}

TEST(StackTest, DescribeNamesEveryOption) {
  StackSpec s = hf_peft();
  s.lora_dropout = 0.05;
  EXPECT_EQ(s.describe(), "hf-peft (sdpa, dropout 0.05, autocast, default allocator)");
  s.lora_dropout = 0;
  s.autocast = false;
  s.attn_impl = AttnImpl::eager;
  s.allocator = AllocatorMode::expandable;
  EXPECT_EQ(s.describe(), "hf-peft (eager, dropout 0, no autocast, expandable allocator)");
  EXPECT_EQ(StackSpec::lorasim_runner().describe(), "lorasim (LibTorch runner)");
}

TEST(StackTermsTest, LorasimStackReadsTheDevicesValuesAndSpreadsItsExpectedError) {
  HardwareModel hw = gpu_with_stack_terms();
  hw.value("expected_time_error") = 0.11;
  const Coefficients v = resolve(hw, StackKind::lorasim);
  // The runner's profile has no spreads of its own: its expected error bounds both sides.
  EXPECT_EQ(v.host_spread, 0.11);
  EXPECT_EQ(v.device_spread, 0.11);
  EXPECT_EQ(v.device_scale, 1.0);
  EXPECT_EQ(v.head_device_scale, 1.0);
  EXPECT_EQ(v.reserved_activation_share, 0.0);
  EXPECT_EQ(v.reserved_logits_share, 0.0);
  EXPECT_EQ(v.worst_case_margin, hw.value("expected_memory_error"));  // the runner's own error
  EXPECT_EQ(v.worst_case_bytes, 0.0);
  for (const Coefficient& c : coefficient_table())
    if (c.field && c.owned_by(StackKind::lorasim)) {
      EXPECT_EQ(c.of(v), hw.value(c, StackKind::lorasim)) << c.name;
    }
}

TEST(StackTermsTest, HfPeftReadsItsOwnRowsAndTheGpusDeviceRows) {
  const HardwareModel hw = gpu_with_stack_terms();
  const Coefficients v = resolve(hw, kHf);
  for (const char* name : {"host_fixed_s", "host_per_op_s", "recompute_host_share", "optimizer_fixed_s",
                           "optimizer_per_tensor_s", "device_scale", "head_device_scale", "saved_scale",
                           "logits_scale", "workspace_bytes", "reserved_overhead_bytes", "reserved_activation_share",
                           "reserved_logits_share", "expected_time_error", "expected_memory_error", "host_spread",
                           "device_spread", "worst_case_margin", "worst_case_bytes"})
    EXPECT_EQ(find_coefficient(name)->of(v), hw.value(name, kHf)) << name;
  EXPECT_EQ(v.host_fixed_s, 2e-3);
  EXPECT_EQ(v.reserved_scale, 1.0);
  EXPECT_EQ(v.attention_score_scale, 1.0);  // the stack's counts include eager attention's scores
  EXPECT_EQ(v.worst_case_margin, 0.04);     // its own row's prior, not its expected memory error
  EXPECT_EQ(v.worst_case_bytes, 256.0 * 1024 * 1024);
  EXPECT_EQ(v.host_spread, 0.3);
  EXPECT_EQ(v.device_spread, 0.15);
  // The runner's overlap loss is its loop's: hf-peft's is its own row (prior 0).
  HardwareModel overlapping = hw;
  overlapping.value("overlap_loss") = 0.25;
  EXPECT_EQ(resolve(overlapping, kHf).overlap_loss, 0.0);
  EXPECT_EQ(resolve(overlapping, StackKind::lorasim).overlap_loss, 0.25);
  // The GPU's own rates and device terms stay.
  for (const char* name : {"gemm_tflops", "gemm_half_tokens", "head_tflops", "attention_tflops", "memory_gbps",
                           "loss_gbps", "per_kernel_s", "device_fixed_s", "launch_queue_ops",
                           "optimizer_device_per_tensor_s", "optimizer_per_param_s", "context_bytes"}) {
    const Coefficient* c = find_coefficient(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->of(v), hw.value(name)) << name;
  }
}

TEST(StackTermsTest, StoringAStacksValuesWritesOnlyItsOwnRows) {
  HardwareModel hw = gpu_with_stack_terms();
  const HardwareModel before = hw;
  Coefficients v = resolve(hw, kHf);
  v.host_per_op_s = 1.23e-4;
  v.gemm_tflops = 1;  // a device row: the stack reads it, it does not own it
  store(v, kHf, hw);
  EXPECT_EQ(hw.value("host_per_op_s", kHf), 1.23e-4);
  EXPECT_EQ(hw.value("host_per_op_s"), before.value("host_per_op_s"));
  EXPECT_EQ(hw.value("gemm_tflops"), before.value("gemm_tflops"));
}

TEST(StackTermsTest, EveryHfPeftNumberIsOneRowOfItsSection) {
  size_t n = 0;
  for (const StoredValue& v : stored_values()) {
    if (std::string(v.entry().section) != "stack.hf-peft") continue;
    ++n;
    EXPECT_EQ(v.stack, kHf) << v.row->name;
  }
  EXPECT_EQ(n, 36u);  // with overlap_loss, a quantized base's host_per_quant_call_s, dequant_s_per_weight_byte and reserved_quant_fused_share, first_step_s, first_step_fused_head_s, cold_start_s, varying_need_default, varying_need_recurring, worst_case_margin, worst_case_margin_options and worst_case_bytes
  EXPECT_EQ(find_coefficient("device_scale")->in(kHf).range, Range::positive);
  // The spreads may be 0 (a point prediction) and stay below 1 (a bound above 0 s).
  for (const char* name : {"host_spread", "device_spread"}) EXPECT_EQ(find_coefficient(name)->in(kHf).range, Range::fraction);
}

TEST(StackTermsTest, SpreadPriorsAreTheH200Figures) {
  const HardwareModel hw;
  EXPECT_EQ(hw.value("host_spread", kHf), 0.20);
  EXPECT_EQ(hw.value("device_spread", kHf), 0.10);
}
