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

TEST(CoefficientsTest, EveryFieldHasExactlyOneEntry) {
  // A field added to the structs without a table entry changes their size but not the table.
  size_t time = 0, memory = 0;
  std::set<std::string> names;
  for (const Coefficient& c : coefficient_table()) {
    (c.time ? time : memory) += 1;
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_EQ(find_coefficient(c.name), &c);
    // Writing the entry's field changes that entry only.
    HardwareModel hw;
    c.of(hw) = 12345;
    for (const Coefficient& other : coefficient_table())
      EXPECT_EQ(other.of(hw) == 12345, &other == &c) << c.name << " vs " << other.name;
  }
  EXPECT_EQ(time * sizeof(double), sizeof(TimeCoefficients));
  EXPECT_EQ(memory * sizeof(double), sizeof(MemoryCoefficients));
  EXPECT_EQ(find_coefficient("no_such_key"), nullptr);
}

TEST(CoefficientsTest, PriorsAreTheStructDefaults) {
  const HardwareModel defaults;
  for (const Coefficient& c : coefficient_table()) EXPECT_EQ(c.prior, c.of(defaults)) << c.name;
  EXPECT_EQ(find_coefficient("launch_queue_ops")->prior, 1024);
}

TEST(CoefficientsTest, LaunchQueueAndContextArePriorsNeverFitted) {
  for (const Coefficient& c : coefficient_table()) {
    const std::string n = c.name;
    EXPECT_EQ(c.fit == Fit::never, n == "launch_queue_ops" || n == "context_bytes") << n;
  }
}

TEST(CoefficientsTest, RatesAreInverseThetas) {
  HardwareModel hw = test_gpu();
  const Coefficient& gemm = *find_coefficient("gemm_tflops");
  EXPECT_DOUBLE_EQ(gemm.theta(hw), 1 / (500e12));
  EXPECT_DOUBLE_EQ(gemm.theta(hw, 0.5), 1 / (250e12));
  EXPECT_DOUBLE_EQ(find_coefficient("memory_gbps")->theta(hw, 0.5), 1 / (2500e9));  // not a FLOP rate
  EXPECT_DOUBLE_EQ(find_coefficient("gemm_half_tokens")->theta(hw), 256 / (500e12));
  EXPECT_DOUBLE_EQ(find_coefficient("per_kernel_s")->theta(hw), 3e-6);
}

namespace {
// The allocated peak above static memory, as the table's terms give it.
double allocated_terms(const Features& f, const HardwareModel& hw) {
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
  hw.memory.saved_scale = 1.25;
  hw.memory.attention_score_scale = 0.5;
  hw.memory.logits_scale = 0.75;
  auto expect_consistent = [&](const char* what) {
    const Features f = features(w, 3);
    const double peak = peak_memory(f, hw).peak_allocated_bytes;
    EXPECT_NEAR(f.static_bytes + allocated_terms(f, hw), peak, 1e-12 * peak) << what;
  };
  expect_consistent("no checkpointing");
  w.train.grad_ckpt = true;
  ASSERT_FALSE(rebuilt_block_sets_peak(features(w, 3), hw.memory));
  expect_consistent("checkpointing, the loss's buffers set the peak");
  hw.memory.logits_scale = 1e-3;
  ASSERT_TRUE(rebuilt_block_sets_peak(features(w, 3), hw.memory));
  expect_consistent("checkpointing, the rebuilt block sets the peak");
}

TEST(CoefficientsTest, ReservedIsScaleTimesAllocatedPlusOverhead) {
  Workload w;
  w.arch = preset("qwen3-1.7b");
  HardwareModel hw = test_gpu();  // reserved_scale 1.05, overhead 256 MiB
  const MemoryEstimate e = peak_memory(features(w, 2), hw);
  EXPECT_DOUBLE_EQ(e.peak_reserved_bytes, 1.05 * e.peak_allocated_bytes + (1 << 28));
}
