// The stack as part of the workload: names, validation, and how [stack.hf-peft]'s terms replace
// a device's for a workload of that stack (model/stack_terms.h).
#include "model/stack.h"

#include <gtest/gtest.h>

#include "model/coefficients.h"
#include "model/error.h"
#include "model/hardware.h"
#include "model/stack_terms.h"
#include "tests/model/test_hardware.h"

using namespace lorasim::model;
using lorasim::InputError;

namespace {

StackSpec hf_peft() {
  StackSpec s;
  s.kind = StackKind::hf_peft;
  return s;
}

// Every number a HardwareModel carries that for_stack may touch, compared one by one.
void expect_same_device(const HardwareModel& a, const HardwareModel& b) {
  for (const Coefficient& c : coefficient_table()) EXPECT_EQ(c.of(a), c.of(b)) << c.name;
  EXPECT_EQ(a.device_scale, b.device_scale);
  EXPECT_EQ(a.head_device_scale, b.head_device_scale);
  EXPECT_EQ(a.reserved_logits_share, b.reserved_logits_share);
  EXPECT_EQ(a.reserved_activation_share, b.reserved_activation_share);
  EXPECT_EQ(a.worst_case_margin, b.worst_case_margin);
  EXPECT_EQ(a.expected_time_error, b.expected_time_error);
  EXPECT_EQ(a.expected_memory_error, b.expected_memory_error);
  EXPECT_EQ(a.calibrated, b.calibrated);
  EXPECT_EQ(a.stack_applied, b.stack_applied);
  EXPECT_EQ(a.host_spread, b.host_spread);
  EXPECT_EQ(a.device_spread, b.device_spread);
}

HardwareModel gpu_with_stack_terms() {
  HardwareModel hw = lorasim::testing::test_gpu();
  StackTerms& t = hw.hf_peft;
  t.host_fixed_s = 2e-3;
  t.host_per_op_s = 9e-5;
  t.recompute_host_share = 1.7;
  t.device_scale = 1.15;
  t.head_device_scale = 1.4;
  t.optimizer_fixed_s = 3e-3;
  t.optimizer_per_tensor_s = 6e-5;
  t.saved_scale = 1.02;
  t.logits_scale = 0.97;
  t.workspace_bytes = 3e8;
  t.reserved_overhead_bytes = 5e8;
  t.reserved_activation_share = 0.06;
  t.reserved_logits_share = 0.8;
  t.expected_time_error = 0.7;     // above the GPU's 0.5
  t.expected_memory_error = 0.04;  // below the GPU's 0.2
  t.host_spread = 0.3;
  t.device_spread = 0.15;
  t.calibrated = true;
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

TEST(StackTermsTest, LorasimStackLeavesTheDeviceUnchangedAndSpreadsItsExpectedError) {
  HardwareModel hw = gpu_with_stack_terms();
  hw.expected_time_error = 0.11;
  const HardwareModel v = for_stack(hw, StackSpec::lorasim_runner());
  // The runner's profile has no spreads of its own: its expected error bounds both sides.
  EXPECT_EQ(v.host_spread, 0.11);
  EXPECT_EQ(v.device_spread, 0.11);
  hw.host_spread = hw.device_spread = 0.11;
  expect_same_device(v, hw);
}

TEST(StackTermsTest, HfPeftReplacesHostOptimizerAndMemoryTermsAndKeepsTheGpuRates) {
  const HardwareModel hw = gpu_with_stack_terms();
  const HardwareModel v = for_stack(hw, hf_peft());
  const StackTerms& t = hw.hf_peft;
  EXPECT_TRUE(v.stack_applied);
  EXPECT_EQ(v.time.host_fixed_s, t.host_fixed_s);
  EXPECT_EQ(v.time.host_per_op_s, t.host_per_op_s);
  EXPECT_EQ(v.time.recompute_host_share, t.recompute_host_share);
  EXPECT_EQ(v.time.optimizer_fixed_s, t.optimizer_fixed_s);
  EXPECT_EQ(v.time.optimizer_per_tensor_s, t.optimizer_per_tensor_s);
  EXPECT_EQ(v.device_scale, t.device_scale);
  EXPECT_EQ(v.head_device_scale, t.head_device_scale);
  EXPECT_EQ(v.memory.saved_scale, t.saved_scale);
  EXPECT_EQ(v.memory.logits_scale, t.logits_scale);
  EXPECT_EQ(v.memory.workspace_bytes, t.workspace_bytes);
  EXPECT_EQ(v.memory.reserved_scale, 1.0);
  EXPECT_EQ(v.memory.reserved_overhead_bytes, t.reserved_overhead_bytes);
  EXPECT_EQ(v.memory.attention_score_scale, 1.0);
  EXPECT_EQ(v.reserved_activation_share, t.reserved_activation_share);
  EXPECT_EQ(v.reserved_logits_share, t.reserved_logits_share);
  EXPECT_EQ(v.worst_case_margin, t.expected_memory_error);
  // The larger of the two errors: the stack's terms cannot be better than the GPU's under them.
  EXPECT_EQ(v.expected_time_error, 0.7);
  EXPECT_EQ(v.expected_memory_error, 0.2);
  EXPECT_EQ(v.host_spread, 0.3);
  EXPECT_EQ(v.device_spread, 0.15);
  EXPECT_TRUE(v.calibrated);
  // The GPU's own rates and device terms stay.
  for (const char* name : {"gemm_tflops", "gemm_half_tokens", "head_tflops", "attention_tflops", "memory_gbps",
                           "loss_gbps", "per_kernel_s", "device_fixed_s", "overlap_loss", "launch_queue_ops",
                           "optimizer_device_per_tensor_s", "optimizer_per_param_s", "context_bytes"}) {
    const Coefficient* c = find_coefficient(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->of(v), c->of(hw)) << name;
  }
}

TEST(StackTermsTest, UncalibratedStackTermsMakeTheViewUncalibrated) {
  HardwareModel hw = gpu_with_stack_terms();
  hw.hf_peft.calibrated = false;
  EXPECT_FALSE(for_stack(hw, hf_peft()).calibrated);
}

TEST(StackTermsTest, ApplyingTheStackTwiceIsApplyingItOnce) {
  HardwareModel hw = gpu_with_stack_terms();
  const HardwareModel once = for_stack(hw, hf_peft());
  // A fit changes the view's terms; a second for_stack must not put the table's back.
  HardwareModel fitted = once;
  fitted.time.host_per_op_s = 1.23e-4;
  fitted.device_scale = 2.5;
  expect_same_device(for_stack(fitted, hf_peft()), fitted);
  expect_same_device(for_stack(once, hf_peft()), once);
}

TEST(StackTermsTest, TableNamesEveryNumberOnceAndFindsThem) {
  const auto& table = stack_term_table();
  EXPECT_EQ(table.size(), 18u);
  for (const StackTerm& t : table) {
    EXPECT_EQ(find_stack_term(t.name), &t) << t.name;
    for (const StackTerm& u : table) {
      if (&t == &u) continue;
      EXPECT_NE(t.field, u.field) << t.name << " and " << u.name;
    }
  }
  EXPECT_EQ(find_stack_term("gemm_tflops"), nullptr);
  EXPECT_TRUE(find_stack_term("device_scale")->positive);
  // The spreads may be 0 (a point prediction) and stay below 1 (a bound above 0 s).
  for (const char* name : {"host_spread", "device_spread"}) {
    ASSERT_NE(find_stack_term(name), nullptr) << name;
    EXPECT_FALSE(find_stack_term(name)->positive) << name;
    EXPECT_TRUE(find_stack_term(name)->fraction) << name;
  }
  EXPECT_FALSE(find_stack_term("device_scale")->fraction);
}

TEST(StackTermsTest, SpreadPriorsAreTheH200Figures) {
  const StackTerms t;
  EXPECT_EQ(t.host_spread, 0.20);
  EXPECT_EQ(t.device_spread, 0.10);
}
