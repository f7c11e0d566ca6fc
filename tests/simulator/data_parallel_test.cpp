// Data-parallel splits: the ring all-reduce, its buckets and exposure, the split enumeration on
// N GPUs, per-GPU memory, and one GPU being exactly what simulate() gave before --gpus.
#include "simulator/data_parallel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "simulator/simulate.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {
sim::Request request(int64_t B, int64_t gpus) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.lora.rank = 16;
  r.workload.train.seq_len = 512;
  r.hardware = test_gpu();
  r.effective_batch = B;
  r.gpus = gpus;
  return r;
}

model::Interconnect link(double gbps, double latency_s) {
  model::Interconnect ic;
  ic.link = model::Link::nvlink;
  ic.allreduce_gbps = gbps;
  ic.allreduce_latency_s = latency_s;
  return ic;
}

std::string error_of(const sim::Request& r) {
  try {
    sim::simulate(r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// qwen3-1.7b, r=16 on all seven projections: 28 layers x 16 x (2x(2048+2048) + 2x(2048+1024) +
// 3x(2048+6144)) = 17,432,576 adapter parameters, fp32 gradients: 69,730,304 bytes, 3 buckets of 25 MiB.
TEST(DataParallelTest, Qwen3AdaptersAllReduceTheirFp32GradientsInThreeBuckets) {
  const sim::DataParallelCost c =
      sim::data_parallel_cost(request(16, 2).workload, 2, link(315, 5e-6), /*micro_batch_device_s=*/0.1);
  EXPECT_EQ(c.gradient_bytes, 17432576 * 4);
  EXPECT_EQ(c.gradient_bytes, 69730304);
  EXPECT_EQ(c.buckets, 3);
  EXPECT_EQ(c.bucket_memory_bytes, 69730304.0);
  // 5 us x 2 x 3 buckets + 69730304 B / 315 GB/s.
  EXPECT_NEAR(c.allreduce_time_s, 3e-5 + 69730304 / 315e9, 1e-15);
}

TEST(DataParallelTest, BucketCountIsTheCeilingOf25MiB) {
  const int64_t mib25 = int64_t{25} << 20;
  EXPECT_EQ(sim::bucket_count(0), 0);
  EXPECT_EQ(sim::bucket_count(1), 1);
  EXPECT_EQ(sim::bucket_count(mib25), 1);
  EXPECT_EQ(sim::bucket_count(mib25 + 1), 2);
  EXPECT_EQ(sim::bucket_count(INT64_MAX), INT64_MAX / mib25 + 1);
}

// 4 GPUs, 1 GB in 2 buckets at 100 GB/s bus and 10 us a ring step:
// 10 us x 2(4-1) x 2 = 120 us, plus 2(4-1)/4 x 1e9 / 1e11 = 15 ms.
TEST(DataParallelTest, RingAllReduceMatchesAWorkedExample) {
  EXPECT_NEAR(sim::ring_allreduce_s(1e9, 2, 4, link(100, 1e-5)), 0.01512, 1e-15);
  EXPECT_EQ(sim::ring_allreduce_s(1e9, 2, 1, link(100, 1e-5)), 0.0);  // one GPU reduces nothing
}

// Three full buckets, each 1 ms on the link (26,214,400 B at 26.2144 GB/s, two GPUs, no latency),
// ready at a third, two thirds and the end of the backward.
TEST(DataParallelTest, OnlyWhatTheLastBackwardDoesNotHideIsExposed) {
  const double bytes = 3.0 * (25 << 20);
  const model::Interconnect l = link(26.2144, 0);
  EXPECT_NEAR(sim::exposed_allreduce_s(bytes, 2, l, 0), 3e-3, 1e-12);         // nothing to hide behind
  EXPECT_NEAR(sim::exposed_allreduce_s(bytes, 2, l, 1.5e-3), 2e-3, 1e-12);    // 3 ms - (1.5 - 0.5) ms
  EXPECT_NEAR(sim::exposed_allreduce_s(bytes, 2, l, 3e-3), 1e-3, 1e-12);      // the last bucket's own
  EXPECT_NEAR(sim::exposed_allreduce_s(bytes, 2, l, 30e-3), 1e-3, 1e-12);     // ready only at the end
  // One bucket is ready only when the backward ends: all of it is exposed.
  EXPECT_NEAR(sim::exposed_allreduce_s(1e6, 2, l, 1.0), 1e6 / 26.2144e9, 1e-15);
  EXPECT_EQ(sim::exposed_allreduce_s(bytes, 1, l, 0), 0.0);
}

TEST(DataParallelTest, TwoGpusSplitSixteenIntoEightPerGpu) {
  const sim::Result r = sim::simulate(request(16, 2));
  ASSERT_EQ(r.splits.size(), 4u);
  const int64_t micro[] = {1, 2, 4, 8}, accum[] = {8, 4, 2, 1};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.splits[i].micro_batch, micro[i]);
    EXPECT_EQ(r.splits[i].accumulation, accum[i]);
    EXPECT_EQ(r.splits[i].gpus, 2);
  }
}

// Each GPU runs the one-GPU split of B / N; the step adds the exposed all-reduce and the memory
// DDP's copy of the gradients.
TEST(DataParallelTest, EachGpuIsTheOneGpuSplitOfItsShareplusTheAllReduce) {
  const sim::Result one = sim::simulate(request(8, 1));
  const sim::Result two = sim::simulate(request(16, 2));
  ASSERT_EQ(one.splits.size(), two.splits.size());
  const model::CostModel cost(request(8, 1).workload, test_gpu());
  for (size_t i = 0; i < one.splits.size(); ++i) {
    const sim::Split &a = one.splits[i], &b = two.splits[i];
    const double backward_s = cost.micro_batch(b.micro_batch, b.accumulation > 1).device_s / 2;
    EXPECT_DOUBLE_EQ(b.allreduce_exposed_s,
                     sim::exposed_allreduce_s(69730304, 2, sim::interconnect_for(test_gpu(), {}), backward_s));
    EXPECT_GT(b.allreduce_exposed_s, 0);
    EXPECT_DOUBLE_EQ(b.step_time_s, a.step_time_s + b.allreduce_exposed_s);
    EXPECT_DOUBLE_EQ(b.worst_reserved_bytes, a.worst_reserved_bytes + 69730304);
    EXPECT_DOUBLE_EQ(b.peak_allocated_bytes, a.peak_allocated_bytes + 69730304);
    EXPECT_DOUBLE_EQ(b.tokens_per_s, 16.0 * 512 / b.step_time_s);
  }
}

TEST(DataParallelTest, OneGpuIsTodaysAnswer) {
  sim::Request plain = request(16, 1);
  const sim::Result a = sim::simulate(plain);
  plain.link = model::Link::pcie;  // a link alone changes nothing on one GPU
  const sim::Result b = sim::simulate(plain);
  ASSERT_EQ(a.splits.size(), b.splits.size());
  for (size_t i = 0; i < a.splits.size(); ++i) {
    EXPECT_EQ(a.splits[i].step_time_s, b.splits[i].step_time_s);
    EXPECT_EQ(a.splits[i].worst_reserved_bytes, b.splits[i].worst_reserved_bytes);
    EXPECT_EQ(b.splits[i].gpus, 1);
    EXPECT_EQ(b.splits[i].allreduce_time_s, 0.0);
  }
  EXPECT_EQ(a.notes, b.notes);
}

TEST(DataParallelTest, AProfileWithoutATableUsesItsLinksPrior) {
  model::HardwareModel hw = test_gpu();
  hw.interconnect.reset();
  EXPECT_EQ(sim::interconnect_for(hw, {}), sim::link_prior(model::Link::pcie));
  EXPECT_EQ(sim::interconnect_for(hw, model::Link::nvlink), sim::link_prior(model::Link::nvlink));
  EXPECT_DOUBLE_EQ(sim::link_prior(model::Link::nvlink).allreduce_gbps, 210);
  EXPECT_DOUBLE_EQ(sim::link_prior(model::Link::pcie).allreduce_gbps, 22.4);
  hw.interconnect = link(315, 5e-6);
  EXPECT_EQ(sim::interconnect_for(hw, {}), link(315, 5e-6));
  EXPECT_EQ(sim::interconnect_for(hw, model::Link::nvlink), link(315, 5e-6));
  EXPECT_EQ(sim::interconnect_for(hw, model::Link::pcie), sim::link_prior(model::Link::pcie));
}

TEST(DataParallelTest, BothCheckpointingSettingsKeepTheAllReduce) {
  const sim::Result r = sim::simulate_both_grad_ckpt(request(16, 2));
  EXPECT_EQ(r.data_parallel.gradient_bytes, 69730304);
  EXPECT_EQ(r.data_parallel.buckets, 3);
  EXPECT_EQ(r.interconnect, sim::link_prior(model::Link::pcie));
  ASSERT_EQ(r.splits.size(), 8u);
  for (const sim::Split& s : r.splits) EXPECT_EQ(s.gpus, 2);
}

TEST(DataParallelTest, SlowerLinksExposeMore) {
  sim::Request r = request(16, 2);
  r.link = model::Link::nvlink;
  const sim::Result fast = sim::simulate(r);
  r.link = model::Link::pcie;
  const sim::Result slow = sim::simulate(r);
  for (size_t i = 0; i < fast.splits.size(); ++i)
    EXPECT_GT(slow.splits[i].allreduce_exposed_s, fast.splits[i].allreduce_exposed_s);
}

TEST(DataParallelTest, AnEffectiveBatchThatDoesNotDivideNamesTheGpuCountsThatDo) {
  EXPECT_EQ(error_of(request(15, 2)),
            "effective batch 15 does not divide among 2 GPUs: use a GPU count that divides it (1, 3, 5, 15) or an "
            "effective batch that is a multiple of 2");
  EXPECT_EQ(error_of(request(16, 0)), "the number of GPUs must be in [1, 64] (the GPUs of one host), got 0");
  EXPECT_EQ(error_of(request(128, 65)), "the number of GPUs must be in [1, 64] (the GPUs of one host), got 65");
  try {
    sim::simulate(request(15, 2));
  } catch (const InputError& e) {
    EXPECT_EQ(e.quantity(), "gpus");
  }
}

TEST(DataParallelTest, MeasuredSplitsAreRefusedOnSeveralGpus) {
  sim::Request r = request(16, 2);
  r.measured.push_back({8, 1, false, 0.5, std::nullopt, std::nullopt});
  EXPECT_NE(error_of(r).find("measured splits of one GPU cannot stand in"), std::string::npos) << error_of(r);
}

// One length on two GPUs: every GPU's step is the same, so the slowest is any one, and the
// lengths simulation gives simulate()'s data-parallel step (less nothing: one shape, no new ones).
TEST(DataParallelTest, OneLengthOnTwoGpusIsTheFixedLengthPrediction) {
  sim::Request l = request(16, 2);
  l.workload.train.lengths = model::LengthDistribution::fixed(512);
  const sim::LengthsResult many = sim::simulate_lengths(l, sim::LengthsOptions{});
  const sim::Result fixed = sim::simulate(request(16, 2));
  ASSERT_EQ(many.result.splits.size(), fixed.splits.size());
  for (size_t i = 0; i < fixed.splits.size(); ++i) {
    EXPECT_NEAR(many.result.splits[i].step_time_s, fixed.splits[i].step_time_s, 1e-9 * fixed.splits[i].step_time_s) << i;
    EXPECT_EQ(many.result.splits[i].worst_reserved_bytes, fixed.splits[i].worst_reserved_bytes) << i;
    EXPECT_EQ(many.result.splits[i].gpus, 2);
  }
}
