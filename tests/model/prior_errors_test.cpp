// A prior's expected errors widen the step-time range and the worst case; a calibration of
// either half of the profile (the device's rows or the stack's own) replaces them.
#include <gtest/gtest.h>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/hardware.h"
#include "model/training_stack.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

constexpr model::StackKind kHf = model::StackKind::hf_peft;
constexpr double kDeviceTermBytes = 2147483648.0;  // the embedded priors' 2 GiB
constexpr double kHfWorstCaseBytes = 268435456.0;  // hf-peft's worst_case_bytes prior, 256 MiB

model::HardwareModel prior_gpu() {
  model::HardwareModel hw = test_gpu();
  hw.calibrated = false;
  hw.value("expected_time_error") = 0.5;
  hw.value("expected_memory_error") = 0.4;
  hw.value("expected_memory_error_bytes") = kDeviceTermBytes;
  return hw;
}

model::Workload hf_workload() {
  model::Workload w;
  w.arch = model::preset("qwen3-1.7b");
  w.train.seq_len = 512;
  w.stack = model::training_stack(kHf).default_spec();
  return w;
}

}  // namespace

TEST(PriorErrorsTest, OnlyAProfileWithNothingCalibratedHasThem) {
  model::HardwareModel hw = prior_gpu();
  EXPECT_EQ(model::prior_errors(hw, kHf).time, 0.5);
  EXPECT_EQ(model::prior_errors(hw, kHf).memory, 0.4);
  EXPECT_EQ(model::prior_errors(hw, kHf).memory_bytes, kDeviceTermBytes);
  EXPECT_EQ(model::prior_errors(hw, model::StackKind::lorasim).memory, 0.4);
  EXPECT_EQ(model::prior_errors(hw, model::StackKind::lorasim).memory_bytes, kDeviceTermBytes);
  hw.origin(kHf).calibrated = true;  // the stack's own rows fitted on this GPU
  EXPECT_EQ(model::prior_errors(hw, kHf).time, 0.0);
  EXPECT_EQ(model::prior_errors(hw, kHf).memory, 0.0);
  EXPECT_EQ(model::prior_errors(hw, kHf).memory_bytes, 0.0);
  EXPECT_EQ(model::prior_errors(test_gpu(), kHf).time, 0.0);  // a calibrated device
}

TEST(PriorErrorsTest, APriorsRangeIsItsExpectedTimeErrorAndItsWorstCaseAddsItsMemoryErrorOfTheVariableMemory) {
  const model::Workload w = hf_workload();
  model::HardwareModel calibrated = prior_gpu();
  calibrated.calibrated = true;
  const model::CostModel prior(w, prior_gpu()), known(w, calibrated);
  const model::StepTime s = prior.step(4, 4), k = known.step(4, 4);
  EXPECT_EQ(s.total_s, k.total_s);  // the prediction itself is the same
  // Host and device both off by 50%: the range is +-50% whichever bounds the step.
  EXPECT_NEAR(s.high_s / s.total_s, 1.5, 1e-12);
  EXPECT_NEAR(s.low_s / s.total_s, 0.5, 1e-12);
  EXPECT_LT(k.high_s / k.total_s, 1.25);  // the stack's own spreads (0.20, 0.10)
  const model::MemoryEstimate m = prior.memory(4), c = known.memory(4);
  EXPECT_EQ(m.peak_reserved_bytes, c.peak_reserved_bytes);
  EXPECT_EQ(m.variable_bytes, c.variable_bytes);
  // Calibrated: the stack's 4% of the variable memory and its 256 MiB.
  EXPECT_DOUBLE_EQ(c.worst_reserved_bytes, c.peak_reserved_bytes + 0.04 * c.variable_bytes + kHfWorstCaseBytes);
  // The prior: its 40% (above the stack's 4%) of the variable memory, and its device term whole.
  EXPECT_DOUBLE_EQ(m.worst_reserved_bytes,
                   m.peak_reserved_bytes + 0.4 * m.variable_bytes + kHfWorstCaseBytes + kDeviceTermBytes);
}

TEST(PriorErrorsTest, APriorsDeviceTermIsAddedWholeToTheWorstCaseAtEveryMicroBatch) {
  // On the seed's T4 run the excess over the count was a near-constant 1.6-1.7 GiB at every split
  // (issue 28): the device term adds the same bytes whatever the micro-batch, on either stack.
  model::HardwareModel without = prior_gpu();
  without.value("expected_memory_error_bytes") = 0;
  for (model::StackKind kind : {kHf, model::StackKind::lorasim}) {
    model::Workload w = hf_workload();
    w.stack = model::training_stack(kind).default_spec();
    const model::CostModel prior(w, prior_gpu()), bare(w, without);
    for (int64_t b : {1, 4, 16}) {
      const model::MemoryEstimate m = prior.memory(b), n = bare.memory(b);
      EXPECT_EQ(m.peak_reserved_bytes, n.peak_reserved_bytes);
      EXPECT_EQ(m.worst_reserved_bytes, n.worst_reserved_bytes + kDeviceTermBytes) << b;
    }
  }
}

TEST(PriorErrorsTest, TheyStayOutOfTheCoefficientsAFitStoresBack) {
  const model::StackModel m = model::stack_model(prior_gpu(), kHf);
  EXPECT_EQ(m.prior.time, 0.5);
  EXPECT_EQ(m.c.host_spread, 0.20);
  EXPECT_EQ(m.c.device_spread, 0.10);
  // The stack's own measured margin and bytes, not the prior's 40% and 2 GiB.
  EXPECT_EQ(m.c.worst_case_margin, 0.04);
  EXPECT_EQ(m.c.worst_case_bytes, kHfWorstCaseBytes);
  EXPECT_EQ(m.prior.memory, 0.4);
  EXPECT_EQ(m.prior.memory_bytes, kDeviceTermBytes);
}
