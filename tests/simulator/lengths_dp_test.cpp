// Data of many lengths on several GPUs: the expected maximum over GPUs worked by hand, a
// two-point distribution whose slowest GPU is the longer with chance 3/4, and the sampled path
// against the exact enumeration of every GPU's step.
#include "simulator/slowest_gpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/lengths.h"
#include "simulator/padded_cost.h"
#include "simulator/simulate.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

// Half the sequences 512 tokens long, half 4096: a device-bound step on the test GPU.
model::LengthDistribution two_point() { return model::LengthDistribution::from_bins({{512, 1}, {4096, 1}}); }

sim::Request request(int64_t B, int64_t gpus) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.lengths = two_point();
  r.workload.train.seq_len = 4096;
  r.hardware = test_gpu();
  r.effective_batch = B;
  r.gpus = gpus;
  return r;
}

const sim::Split& split(const sim::LengthsResult& r, int64_t micro_batch, size_t* index = nullptr) {
  for (size_t i = 0; i < r.result.splits.size(); ++i)
    if (r.result.splits[i].micro_batch == micro_batch) {
      if (index) *index = i;
      return r.result.splits[i];
    }
  throw std::runtime_error("no such split");
}

}  // namespace

// {1, 2, 3, 4} equally likely: the maximum of two is k with chance ((k/4)^2 - ((k-1)/4)^2) =
// 1/16, 3/16, 5/16, 7/16, so E = (1 + 6 + 15 + 28) / 16 = 3.125; one draw: the mean, 2.5.
TEST(LengthsDpTest, ExpectedMaxOfSampledStepsIsWorkedByHand) {
  const std::vector<double> x = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(sim::expected_max_of_sorted(x, 1), 2.5);
  EXPECT_DOUBLE_EQ(sim::expected_max_of_sorted(x, 2), 3.125);
  // The median of the maximum of two: the 0.5^(1/2) = 0.707 quantile of one, x_(ceil(2.83)) = 3.
  EXPECT_EQ(sim::max_quantile_of_sorted(x, 2, 0.5), 3);
  EXPECT_EQ(sim::max_quantile_of_sorted(x, 1, 0.99), 4);
  EXPECT_EQ(sim::max_quantile_of_sorted(x, 1, 0.5), 2);  // ceil(0.99 n) - 1 as lengths_sim takes its p99
}

// 10 or 20 with chance 1/2 each: the larger of two is 20 unless both are 10 (1/4): 17.5.
TEST(LengthsDpTest, ExpectedMaxOfALadderIsExact) {
  const sim::Ladder l{{10, 20}, {0.5, 1}};
  EXPECT_DOUBLE_EQ(sim::expected_max(l, 1), 15);
  EXPECT_DOUBLE_EQ(sim::expected_max(l, 2), 17.5);
  EXPECT_DOUBLE_EQ(sim::expected_max(l, 3), 10 * 0.125 + 20 * 0.875);
  EXPECT_EQ(sim::max_quantile(l, 2, 0.25), 10);
  EXPECT_EQ(sim::max_quantile(l, 2, 0.26), 20);
  EXPECT_EQ(sim::max_quantile(l, 2, 0.99), 20);
}

// Two GPUs, one sequence each per step: the step is the 4096-token one's unless both drew 512
// tokens (chance 1/4), so E = step(512) / 4 + 3 step(4096) / 4, exactly; the p99 is step(4096).
TEST(LengthsDpTest, TwoPointLengthsOnTwoGpusWaitForTheLongerThreeTimesInFour) {
  const sim::LengthsResult r = sim::simulate_lengths(request(2, 2));
  size_t i = 0;
  const sim::Split& s = split(r, 1, &i);
  ASSERT_EQ(s.accumulation, 1);
  EXPECT_EQ(s.gpus, 2);
  sim::PaddedLengthCosts cache(request(2, 2).workload, test_gpu());
  const auto step_at = [&](int64_t len) {
    const model::CostModel& c = cache.at(len);
    const model::MicroBatchTime t = c.micro_batch(1, false);
    return c.step_of(t.host_s + c.optimizer().host_s, t.device_s + c.optimizer().device_s).total_s;
  };
  const double expected = 0.25 * step_at(512) + 0.75 * step_at(4096);
  const sim::LengthFigures& f = r.lengths[i];
  EXPECT_NEAR(s.step_time_s - f.new_shape_time_s - s.allreduce_exposed_s, expected, 1e-12 * expected);
  EXPECT_NEAR(f.step_time_p99_s - f.new_shape_time_s - s.allreduce_exposed_s, step_at(4096), 1e-12 * expected);
  EXPECT_GT(s.allreduce_exposed_s, 0);
  // Each GPU meets its own new shapes: twice one GPU's stalls.
  sim::Request one = request(1, 1);
  const sim::LengthsResult single = sim::simulate_lengths(one);
  EXPECT_DOUBLE_EQ(f.new_shape_time_s, 2 * single.lengths[0].new_shape_time_s);
  // Two sequences per step on two GPUs: one step per epoch of two sequences.
  EXPECT_EQ(f.steps_per_epoch, 1);
  // The worst micro-batch is each GPU's own, plus DDP's copy of the gradients.
  EXPECT_EQ(s.worst_reserved_bytes,
            single.result.splits[0].worst_reserved_bytes + r.result.data_parallel.bucket_memory_bytes);
  EXPECT_EQ(s.peak_allocated_bytes,
            single.result.splits[0].peak_allocated_bytes + r.result.data_parallel.bucket_memory_bytes);
}

// Two micro-batches per GPU per step: no ladder, the maximum over the sampled steps. Every GPU's
// step is one of four equally likely (first, second) lengths; the exact expected maximum of two
// enumerates the 16 pairs. The sampled answer (50,000 steps: a standard error near 0.07%) is
// within sampling error of it.
TEST(LengthsDpTest, SampledStepsAgreeWithTheEnumeratedMaximum) {
  sim::LengthsOptions o;
  o.sampled_steps = 50000;
  const sim::LengthsResult r = sim::simulate_lengths(request(4, 2), o);
  size_t i = 0;
  const sim::Split& s = split(r, 1, &i);
  ASSERT_EQ(s.accumulation, 2);
  sim::PaddedLengthCosts cache(request(4, 2).workload, test_gpu());
  std::vector<double> steps;
  for (int64_t first : {512, 4096})
    for (int64_t second : {512, 4096}) {
      const model::MicroBatchTime a = cache.at(first).micro_batch(1, false);
      const model::CostModel& last = cache.at(second);
      const model::MicroBatchTime b = last.micro_batch(1, true);
      steps.push_back(last.step_of(a.host_s + b.host_s + last.optimizer().host_s,
                                   a.device_s + b.device_s + last.optimizer().device_s).total_s);
    }
  double exact = 0;
  for (double x : steps)
    for (double y : steps) exact += std::max(x, y) / 16;
  const double predicted = s.step_time_s - r.lengths[i].new_shape_time_s - s.allreduce_exposed_s;
  EXPECT_NEAR(predicted, exact, 0.003 * exact);
  // And above one GPU's mean: waiting for the slower costs something.
  double mean = 0;
  for (double x : steps) mean += x / 4;
  EXPECT_GT(predicted, mean * (1 + 1e-6));
  EXPECT_EQ(r.lengths[i].steps_per_epoch, 1);  // ceil(2 sequences / 4)
}

TEST(LengthsDpTest, FsdpOnLengthsShardsTheWorstMicroBatchsMemory) {
  sim::Request r = request(2, 2);
  r.fsdp = true;
  const sim::LengthsResult f = sim::simulate_lengths(r);
  const sim::LengthsResult one = sim::simulate_lengths(request(1, 1));
  const sim::Split& s = f.result.splits[0];
  EXPECT_TRUE(s.fsdp);
  EXPECT_EQ(s.allreduce_exposed_s, 0);
  EXPECT_GT(s.fsdp_exposed_s, 0);
  EXPECT_DOUBLE_EQ(s.peak_allocated_bytes, one.result.splits[0].peak_allocated_bytes + f.result.fsdp_memory.delta_bytes);
  EXPECT_LT(f.result.fsdp_memory.delta_bytes, 0);
}

TEST(LengthsDpTest, AnIndivisibleBatchIsRefused) {
  EXPECT_THROW(sim::simulate_lengths(request(3, 2)), InputError);
}
