// The coefficient table against the structs it describes and the equations that use it.
#include "model/coefficients.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "tests/model/test_hardware.h"

using namespace lorasim::model;
using lorasim::testing::test_gpu;

TEST(CoefficientsTest, EveryFieldHasExactlyOneRow) {
  // A field added to Coefficients without a row changes its size but not the table.
  size_t fields = 0;
  std::set<std::string> names;
  for (const Coefficient& c : coefficient_table()) {
    if (!c.field) continue;
    ++fields;
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_EQ(find_coefficient(c.name), &c);
    // Writing the row's field changes that row only.
    Coefficients v;
    c.of(v) = 12345;
    for (const Coefficient& other : coefficient_table())
      if (other.field) {
        EXPECT_EQ(other.of(v) == 12345, &other == &c) << c.name << " vs " << other.name;
      }
  }
  EXPECT_EQ(fields * sizeof(double), sizeof(Coefficients));
  EXPECT_EQ(find_coefficient("no_such_key"), nullptr);
}

TEST(CoefficientsTest, AFreshModelHoldsEveryStacksPriors) {
  const HardwareModel defaults;
  for (StackKind s : {StackKind::lorasim, StackKind::hf_peft})
    for (const Coefficient& c : coefficient_table())
      if (!c.in(s).same_as && (c.owned_by(s) || !c.shared())) {
        EXPECT_EQ(c.in(s).prior, defaults.value(c, s)) << c.name;
      }
  EXPECT_EQ(find_coefficient("launch_queue_ops")->in(StackKind::lorasim).prior, 1024);
  EXPECT_EQ(defaults.value("device_scale", StackKind::hf_peft), 1.07);
  EXPECT_EQ(defaults.value("device_scale", StackKind::lorasim), 1.0);
}

TEST(CoefficientsTest, LaunchQueueAndContextAreTheRunnersPriorsNeverFitted) {
  for (const Coefficient& c : coefficient_table()) {
    const std::string n = c.name;
    if (!c.owned_by(StackKind::lorasim) || c.in(StackKind::lorasim).section == std::string("profile")) continue;
    EXPECT_EQ(c.in(StackKind::lorasim).fit == Fit::never, n == "launch_queue_ops" || n == "context_bytes") << n;
  }
}

TEST(CoefficientsTest, DeviceRowsAreOneValueForEveryStack) {
  HardwareModel hw = test_gpu();
  for (const Coefficient& c : coefficient_table()) {
    if (!c.shared()) continue;
    EXPECT_EQ(c.slot[StackKind::lorasim.index], c.slot[StackKind::hf_peft.index]) << c.name;
    EXPECT_FALSE(c.owned_by(StackKind::hf_peft)) << c.name;
    EXPECT_EQ(hw.value(c, StackKind::hf_peft), hw.value(c, StackKind::lorasim)) << c.name;
  }
  EXPECT_TRUE(find_coefficient("gemm_tflops")->shared());
  EXPECT_FALSE(find_coefficient("host_per_op_s")->shared());
}

TEST(CoefficientsTest, TheRunnersSpreadsAndWorstCaseMarginAreItsExpectedErrorsAndHfPeftsMarginIsItsOwnRow) {
  HardwareModel hw = test_gpu();
  hw.value("expected_time_error") = 0.11;
  hw.value("expected_memory_error") = 0.13;
  const Coefficients c = resolve(hw, StackKind::lorasim);
  EXPECT_EQ(c.host_spread, 0.11);
  EXPECT_EQ(c.device_spread, 0.11);
  EXPECT_EQ(c.worst_case_margin, 0.13);
  EXPECT_EQ(c.worst_case_bytes, 0);
  // hf-peft's margin is a measured row of its own (bench/results/worst-case.md), not its
  // expected memory error: changing the one leaves the other.
  hw.value("expected_memory_error", StackKind::hf_peft) = 0.07;
  const Coefficients hf = resolve(hw, StackKind::hf_peft);
  EXPECT_EQ(hf.worst_case_margin, 0.04);
  EXPECT_EQ(hf.worst_case_margin_options, 0.06);
  EXPECT_EQ(hf.worst_case_bytes, 256.0 * 1024 * 1024);
  hw.value("worst_case_margin", StackKind::hf_peft) = 0.07;
  EXPECT_EQ(resolve(hw, StackKind::hf_peft).worst_case_margin, 0.07);
}

TEST(CoefficientsTest, RatesAreInverseThetas) {
  const Coefficients hw = resolve(test_gpu(), StackKind::lorasim);
  const Coefficient& gemm = *find_coefficient("gemm_tflops");
  EXPECT_DOUBLE_EQ(gemm.theta(hw), 1 / (500e12));
  EXPECT_DOUBLE_EQ(gemm.theta(hw, 0.5), 1 / (250e12));
  EXPECT_DOUBLE_EQ(find_coefficient("memory_gbps")->theta(hw, 0.5), 1 / (2500e9));  // not a FLOP rate
  EXPECT_DOUBLE_EQ(find_coefficient("gemm_half_tokens")->theta(hw), 256 / (500e12));
  EXPECT_DOUBLE_EQ(find_coefficient("per_kernel_s")->theta(hw), 3e-6);
}

namespace {
// The allocated peak above static memory, as the table's terms give it.
double allocated_terms(const Features& f, const HardwareModel& device) {
  const Coefficients hw = resolve(device, StackKind::lorasim);
  double s = 0;
  for (const Coefficient& c : coefficient_table())
    if (c.term == Term::allocated) s += c.theta(hw) * c.feature(f, hw);
  return s;
}
}  // namespace

TEST(CoefficientsTest, AllocatedTermsAreThePeakOnEachSideOfACheckpointedPeak) {
  Workload w;
  w.arch = preset("qwen3-1.7b");
  HardwareModel hw = test_gpu();
  hw.value("saved_scale") = 1.25;
  hw.value("attention_score_scale") = 0.5;
  hw.value("logits_scale") = 0.75;
  auto expect_consistent = [&](const char* what) {
    const Features f = features(w, 3);
    const double peak = peak_memory(f, lorasim::testing::runner(hw)).peak_allocated_bytes;
    EXPECT_NEAR(f.static_bytes + allocated_terms(f, hw), peak, 1e-12 * peak) << what;
  };
  expect_consistent("no checkpointing");
  w.train.grad_ckpt = true;
  ASSERT_FALSE(rebuilt_block_sets_peak(features(w, 3), resolve(hw, StackKind::lorasim)));
  expect_consistent("checkpointing, the loss's buffers set the peak");
  hw.value("logits_scale") = 1e-3;
  ASSERT_TRUE(rebuilt_block_sets_peak(features(w, 3), resolve(hw, StackKind::lorasim)));
  expect_consistent("checkpointing, the rebuilt block sets the peak");
}

TEST(CoefficientsTest, ReservedIsScaleTimesAllocatedPlusOverhead) {
  Workload w;
  w.arch = preset("qwen3-1.7b");
  HardwareModel hw = test_gpu();  // reserved_scale 1.05, overhead 256 MiB
  const MemoryEstimate e = peak_memory(features(w, 2), lorasim::testing::runner(hw));
  EXPECT_DOUBLE_EQ(e.peak_reserved_bytes, 1.05 * e.peak_allocated_bytes + (1 << 28));
}
