// The simulator for data of many lengths: the one-point case against the fixed-length figures,
// the sampled mean against brute force, the worst micro-batch deciding fits, the epoch.
#include "simulator/lengths_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/lengths.h"
#include "simulator/simulate.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

sim::Request request(int64_t B, const model::LengthDistribution& d, model::Padding p = {}) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.lengths = d;
  r.workload.train.seq_len = d.max_length_tokens();
  r.workload.train.padding = p;
  r.hardware = test_gpu();
  r.effective_batch = B;
  return r;
}

model::CostModel cost_at(const sim::Request& r, int64_t seq_len) {
  model::Workload w = r.workload;
  w.train.lengths.reset();
  w.train.padding = {};
  w.train.seq_len = seq_len;
  return model::CostModel(w, r.hardware);
}

}  // namespace

TEST(LengthsSimTest, OnePointDistributionGivesTheFixedLengthFigures) {
  for (model::StackSpec stack : {model::StackSpec{}, model::StackSpec::lorasim_runner()}) {
    sim::Request lengths = request(16, model::LengthDistribution::from_bins({{512, 4000}}));
    lengths.workload.stack = stack;
    sim::Request fixed = lengths;
    fixed.workload.train.lengths.reset();
    const sim::Result f = sim::simulate(fixed);
    const sim::LengthsResult l = sim::simulate_lengths(lengths);
    ASSERT_EQ(l.result.splits.size(), f.splits.size());
    for (size_t i = 0; i < f.splits.size(); ++i) {
      const sim::Split &a = f.splits[i], &b = l.result.splits[i];
      EXPECT_NEAR(b.step_time_s, a.step_time_s, 0.01 * a.step_time_s) << a.micro_batch;
      EXPECT_NEAR(l.lengths[i].step_time_p99_s, a.step_time_s, 0.01 * a.step_time_s);
      EXPECT_GE(b.peak_reserved_bytes, a.peak_reserved_bytes);
      EXPECT_GE(b.worst_reserved_bytes, a.worst_reserved_bytes);
      EXPECT_EQ(b.fits, a.fits);
      EXPECT_EQ(l.lengths[i].padding_fraction, 0);
      EXPECT_EQ(l.lengths[i].steps_per_epoch, 250);  // 4000 sequences / 16
      EXPECT_DOUBLE_EQ(l.lengths[i].epoch_time_s, 250 * b.step_time_s + l.lengths[i].first_step_s);  // no new shape
    }
    EXPECT_EQ(l.result.recommended, f.recommended);
  }
}

// Two micro-batches of two sequences from {100 x3, 400 x1}: the longest of two is 100 with
// probability (3/4)^2 = 9/16, else 400; the step's four cases weighted exactly.
TEST(LengthsSimTest, MeanStepMatchesBruteForceOnATinyHistogram) {
  const sim::Request r = request(4, model::LengthDistribution::from_bins({{100, 3}, {400, 1}}));
  const model::CostModel c100 = cost_at(r, 100), c400 = cost_at(r, 400);
  const model::OptimizerTime& opt = c100.optimizer();
  const double p[2] = {9.0 / 16, 7.0 / 16};
  const model::CostModel* c[2] = {&c100, &c400};
  double mean = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const model::MicroBatchTime first = c[i]->micro_batch(2), acc = c[j]->micro_batch(2, true);
      mean += p[i] * p[j] *
              c400.step_of(first.host_s + acc.host_s + opt.host_s, first.device_s + acc.device_s + opt.device_s).total_s;
    }
  sim::LengthsOptions o;
  o.sampled_steps = 40000;
  const sim::LengthsResult l = sim::simulate_lengths(r, o);
  const sim::Split& s = l.result.splits[1];
  ASSERT_EQ(s.micro_batch, 2);
  EXPECT_NEAR(s.step_time_s, mean, 0.01 * mean);
  // Both micro-batches at 400 has probability 49/256 > 1%: the p99 step is that one.
  const double longest = c400.step(2, 2).total_s;
  EXPECT_NEAR(l.lengths[1].step_time_p99_s, longest, 1e-12 * longest);
  // The padding is exact: E[longest of 2] = 100 x 9/16 + 400 x 7/16 = 231.25 against a mean of 175.
  EXPECT_DOUBLE_EQ(l.lengths[1].mean_padded_length_tokens, 231.25);
  EXPECT_DOUBLE_EQ(l.lengths[1].padding_fraction, 1 - 175 / 231.25);
  EXPECT_EQ(l.lengths[1].steps_per_epoch, 1);  // 4 sequences, B = 4
}

TEST(LengthsSimTest, TheSameSeedGivesTheSameFigures) {
  const sim::Request r = request(16, model::LengthDistribution::from_bins({{64, 50}, {300, 20}, {2048, 3}}));
  const sim::LengthsResult a = sim::simulate_lengths(r), b = sim::simulate_lengths(r);
  for (size_t i = 0; i < a.result.splits.size(); ++i) {
    EXPECT_EQ(a.result.splits[i].step_time_s, b.result.splits[i].step_time_s);
    EXPECT_EQ(a.lengths[i].step_time_p99_s, b.lengths[i].step_time_p99_s);
    const sim::Split& s = a.result.splits[i];
    const double longest = cost_at(r, 2048).step(s.micro_batch, s.accumulation).total_s;
    EXPECT_LE(a.lengths[i].step_time_p99_s, longest * (1 + 1e-12));
    EXPECT_LE(s.step_time_s, longest * (1 + 1e-12));
  }
}

// Mostly short data with two long sequences: a micro-batch of their mean length fits, the
// worst one (both long sequences together) does not, and it decides.
TEST(LengthsSimTest, TheWorstMicroBatchDecidesFits) {
  sim::Request r = request(8, model::LengthDistribution::from_bins({{128, 10000}, {4096, 2}}));
  r.workload.stack = model::StackSpec::lorasim_runner();
  const model::CostModel c128 = cost_at(r, 128), c4096 = cost_at(r, 4096);
  // A limit between the 8x128 and the 8x4096 micro-batch's worst case.
  const double usable = 0.5 * (c128.memory(8).worst_reserved_bytes + c4096.memory(8).worst_reserved_bytes);
  r.safety_margin = 0;
  r.memory_limit_bytes = static_cast<int64_t>(usable + r.hardware.value("context_bytes"));
  const sim::LengthsResult l = sim::simulate_lengths(r);
  const sim::Split& s8 = l.result.splits.back();
  ASSERT_EQ(s8.micro_batch, 8);
  EXPECT_EQ(l.lengths.back().worst_padded_length_tokens, 4096);
  EXPECT_LT(l.lengths.back().mean_padded_length_tokens, 200);  // the mean micro-batch would fit
  EXPECT_GE(s8.worst_reserved_bytes, c4096.memory(8).worst_reserved_bytes);
  EXPECT_FALSE(s8.fits);
  for (size_t i = 0; i < l.result.splits.size(); ++i) {
    const sim::Split& s = l.result.splits[i];
    EXPECT_EQ(s.fits, s.worst_reserved_bytes <= l.result.usable_memory_bytes);
    if (!s.fits) {
      EXPECT_EQ(s.rank, 0);
    }
  }
  ASSERT_TRUE(l.result.recommended.has_value());
  EXPECT_LT(l.result.splits[*l.result.recommended].micro_batch, 8);
}

TEST(LengthsSimTest, VaryingShapesAddTheAllocatorsHoldUnderTheDefaultAllocator) {
  const model::LengthDistribution d = model::LengthDistribution::from_bins({{100, 30}, {1024, 10}});
  sim::Request r = request(4, d);
  r.workload.stack = model::StackSpec{};  // hf-peft: the stack whose allocator shares were measured
  r.workload.stack.allocator = model::AllocatorMode::default_segments;
  const sim::LengthsResult l = sim::simulate_lengths(r);
  const model::Coefficients c = cost_at(r, 1024).model().c;
  const double share = sim::varying_shape_share(c, model::AllocatorMode::default_segments, true);
  ASSERT_GT(share, 0);
  ASSERT_FALSE(model::runs_worst_case_options(r.workload));
  for (size_t i = 0; i < l.result.splits.size(); ++i) {
    const model::MemoryEstimate m = cost_at(r, 1024).memory(l.result.splits[i].micro_batch);
    EXPECT_GT(l.lengths[i].activation_bytes, 0);
    // Shapes that vary also take the share of the options whose counts missed more.
    EXPECT_DOUBLE_EQ(l.result.splits[i].worst_reserved_bytes,
                     m.worst_reserved_bytes + c.worst_case_margin_options * m.variable_bytes +
                         share * l.lengths[i].activation_bytes);
  }
  // Padding to the maximum length gives one shape: nothing is added.
  const sim::LengthsResult flat = sim::simulate_lengths(request(4, d, model::parse_padding("max_length")));
  for (size_t i = 0; i < flat.result.splits.size(); ++i)
    EXPECT_EQ(flat.lengths[i].varying_shape_worst_bytes, 0);
}

TEST(LengthsSimTest, AtTheLimitTheDefaultAllocatorNeedsItsAllocatedPeakPlusTheMeasuredShare) {
  const model::LengthDistribution d = model::LengthDistribution::from_bins({{100, 30}, {1024, 10}});
  sim::Request r = request(4, d);
  r.workload.stack = model::StackSpec{};
  r.workload.stack.allocator = model::AllocatorMode::default_segments;
  r.hardware.value("varying_bound_default", model::StackKind::hf_peft) = 1.5;
  r.hardware.value("varying_need_default", model::StackKind::hf_peft) = 0.25;
  const sim::LengthsResult l = sim::simulate_lengths(r);
  for (size_t i = 0; i < l.result.splits.size(); ++i) {
    const sim::Split& s = l.result.splits[i];
    const model::MemoryEstimate m = cost_at(r, 1024).memory(s.micro_batch);
    const double act = l.lengths[i].activation_bytes;
    // allocated + 0.25 x activations, between the fixed-shape worst case and the unbounded hold
    const double want = std::min(s.worst_reserved_bytes, std::max(m.worst_reserved_bytes, m.peak_allocated_bytes + 0.25 * act));
    EXPECT_DOUBLE_EQ(s.needed_bytes, want);
    EXPECT_LT(s.needed_bytes, s.worst_reserved_bytes);
    EXPECT_EQ(s.fits, s.needed_bytes <= l.result.usable_memory_bytes);
  }
  // Without a measured share, and under expandable segments, the worst case decides.
  r.hardware.value("varying_need_default", model::StackKind::hf_peft) = 0;
  for (const sim::Split& s : sim::simulate_lengths(r).result.splits) EXPECT_EQ(s.needed_bytes, s.worst_reserved_bytes);
  r.hardware.value("varying_need_default", model::StackKind::hf_peft) = 0.25;
  r.workload.stack.allocator = model::AllocatorMode::expandable;
  for (const sim::Split& s : sim::simulate_lengths(r).result.splits) EXPECT_EQ(s.needed_bytes, s.worst_reserved_bytes);
  // One shape: nothing to give back beyond the fixed-shape worst case.
  r.workload.stack.allocator = model::AllocatorMode::default_segments;
  for (const sim::Split& s : sim::simulate_lengths(request(4, d, model::parse_padding("max_length"))).result.splits)
    EXPECT_EQ(s.needed_bytes, s.worst_reserved_bytes);
}

// Checkpointed, the need falls from varying_need_default to varying_need_recurring with the chance
// that a micro-batch has the worst width; without checkpointing it stays varying_need_default.
TEST(LengthsSimTest, ACheckpointedNeedFallsAsTheWorstWidthRecurs) {
  const model::LengthDistribution d = model::LengthDistribution::from_bins({{100, 30}, {1024, 10}});
  sim::Request r = request(4, d);
  r.workload.stack = model::StackSpec{};
  r.workload.stack.allocator = model::AllocatorMode::default_segments;
  r.workload.train.grad_ckpt = true;
  r.hardware.value("varying_bound_default", model::StackKind::hf_peft) = 3.0;
  r.hardware.value("varying_need_default", model::StackKind::hf_peft) = 0.6;
  r.hardware.value("varying_need_recurring", model::StackKind::hf_peft) = 0.2;
  const sim::LengthsResult l = sim::simulate_lengths(r);
  int decided_by_share = 0;
  for (size_t i = 0; i < l.result.splits.size(); ++i) {
    const sim::Split& s = l.result.splits[i];
    const double reach = 1 - std::pow(0.75, static_cast<double>(s.micro_batch));
    EXPECT_DOUBLE_EQ(l.lengths[i].worst_width_reach, reach);
    const model::MemoryEstimate m = cost_at(r, 1024).memory(s.micro_batch);
    const double share = 0.6 - 0.4 * reach, act = l.lengths[i].activation_bytes;
    const double fixed_shape = s.worst_reserved_bytes - 3.0 * act;  // the bound adds 3.0 x activations
    const double at_limit = m.peak_allocated_bytes + share * act;
    EXPECT_NEAR(s.needed_bytes, std::min(s.worst_reserved_bytes, std::max(fixed_shape, at_limit)), 1.0) << s.micro_batch;
    decided_by_share += at_limit > fixed_shape;
  }
  EXPECT_GT(decided_by_share, 0);
  model::Workload w = r.workload;
  const model::Coefficients c = model::stack_model(r.hardware, model::StackKind::hf_peft).c;
  EXPECT_DOUBLE_EQ(sim::varying_need_share(c, w, 0.0), 0.6);
  EXPECT_DOUBLE_EQ(sim::varying_need_share(c, w, 0.25), 0.5);
  EXPECT_DOUBLE_EQ(sim::varying_need_share(c, w, 1.0), 0.2);
  w.train.grad_ckpt = false;
  EXPECT_DOUBLE_EQ(sim::varying_need_share(c, w, 1.0), 0.6);
}

TEST(LengthsSimTest, GroupingByLengthPadsLessAndStepsFaster) {
  const sim::Request r = request(16, model::LengthDistribution::from_bins({{64, 500}, {256, 300}, {1024, 100}}));
  sim::LengthsOptions grouped;
  grouped.group_by_length = true;
  const sim::LengthsResult a = sim::simulate_lengths(r), g = sim::simulate_lengths(r, grouped);
  const size_t last = a.result.splits.size() - 1;  // 16x1
  EXPECT_LT(g.lengths[last].padding_fraction, a.lengths[last].padding_fraction);
  EXPECT_LT(g.result.splits[last].step_time_s, a.result.splits[last].step_time_s);
}

TEST(LengthsSimTest, PackingFillsRowsOfTheMaximumLength) {
  const model::LengthDistribution d = model::LengthDistribution::from_bins({{100, 30}, {412, 10}}).truncated(512);
  const sim::LengthsResult l = sim::simulate_lengths(request(4, d, model::parse_padding("packed")));
  EXPECT_EQ(l.rows_per_epoch, 14);  // ceil((3000 + 4120) / 512)
  for (const auto& f : l.lengths) {
    EXPECT_EQ(f.padding_fraction, 0);
    EXPECT_EQ(f.steps_per_epoch, 4);
  }
}

TEST(LengthsSimTest, SimulateRefusesDataOfManyLengths) {
  const sim::Request r = request(4, model::LengthDistribution::from_bins({{100, 3}, {400, 1}}));
  try {
    sim::simulate(r);
    FAIL() << "simulate accepted varying lengths";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("simulate_lengths"), std::string::npos) << e.what();
  }
  sim::LengthsOptions o;
  o.sampled_steps = 0;
  EXPECT_THROW(sim::simulate_lengths(r, o), InputError);
}

TEST(LengthsSimTest, AnEpochMeetsEveryLengthOnceAtMicroBatchOne) {
  // 300 sequences of 300 distinct lengths, one pass: a trainer's sampler draws each once, so an
  // epoch at micro-batch 1 meets all 300 shapes (299 after the warm-up's), not the 189 that
  // independent draws would.
  std::vector<model::LengthBin> bins;
  for (int64_t l = 1; l <= 300; ++l) bins.push_back({l, 1});
  sim::Request r = request(4, model::LengthDistribution::from_bins(bins));
  r.workload.stack = model::StackSpec{};  // hf-peft, whose new_shape_s was measured
  const sim::LengthsResult res = sim::simulate_lengths(r);
  for (size_t i = 0; i < res.result.splits.size(); ++i) {
    if (res.result.splits[i].micro_batch == 1) {
      EXPECT_DOUBLE_EQ(res.lengths[i].new_shapes_per_epoch, 299.0);
    }
  }
}

TEST(LengthsSimTest, AFreshProcessEpochPaysTheFirstStepOnce) {
  // The epoch is a fresh process's: its steady steps, its new shapes, and first_step_s once,
  // whatever the split; the steps' own times do not carry it.
  sim::Request r = request(8, model::LengthDistribution::from_bins({{100, 3}, {300, 5}, {700, 2}}));
  r.workload.stack = model::StackSpec{};  // hf-peft
  r.hardware.value("first_step_s", model::StackKind::hf_peft) = 0;
  const sim::LengthsResult without = sim::simulate_lengths(r);
  r.hardware.value("first_step_s", model::StackKind::hf_peft) = 3.25;
  const sim::LengthsResult with = sim::simulate_lengths(r);
  ASSERT_EQ(without.lengths.size(), with.lengths.size());
  for (size_t i = 0; i < with.lengths.size(); ++i) {
    EXPECT_EQ(with.lengths[i].first_step_s, 3.25);
    EXPECT_DOUBLE_EQ(with.lengths[i].epoch_time_s, without.lengths[i].epoch_time_s + 3.25);
    EXPECT_EQ(with.result.splits[i].step_time_s, without.result.splits[i].step_time_s);
  }
}

TEST(LengthsSimTest, TheHfStackHoldsTheMeasuredFirstStep) {
  // bench/hf/epochs_accuracy.py --fit's figures; the runner, never measured, has none.
  const model::HardwareModel hw = test_gpu();
  const model::Coefficients hf = model::resolve(hw, model::StackKind::hf_peft);
  EXPECT_EQ(hf.first_step_s, 0.46);
  EXPECT_EQ(hf.first_step_fused_head_s, 0.69);
  EXPECT_EQ(hf.cold_start_s, 5.5);
  EXPECT_EQ(model::process_first_step_s(hf, false), 0.46);
  EXPECT_DOUBLE_EQ(model::process_first_step_s(hf, true), 0.46 + 0.69);
  const model::Coefficients runner = model::resolve(hw, model::StackKind::lorasim);
  EXPECT_EQ(model::process_first_step_s(runner, true), 0.0);
  EXPECT_EQ(runner.cold_start_s, 0.0);
}

TEST(LengthsSimTest, TheFusedHeadsFirstStepAndTheColdStartGoWhereTheyBelong) {
  // TRL's fused head adds its kernels' load to the first step, so to the epoch; the first run on a
  // machine adds cold_start_s to the epoch's high end alone, never to the expected epoch or a step.
  sim::Request r = request(8, model::LengthDistribution::from_bins({{100, 3}, {300, 5}, {700, 2}}));
  r.workload.stack = model::StackSpec{};  // hf-peft
  r.hardware.value("first_step_s", model::StackKind::hf_peft) = 1.0;
  r.hardware.value("first_step_fused_head_s", model::StackKind::hf_peft) = 0.5;
  r.hardware.value("cold_start_s", model::StackKind::hf_peft) = 0;
  r.workload.stack.fused_lm_head = false;
  const sim::LengthsResult plain = sim::simulate_lengths(r);
  r.workload.stack.fused_lm_head = true;
  const sim::LengthsResult fused = sim::simulate_lengths(r);
  r.hardware.value("cold_start_s", model::StackKind::hf_peft) = 4.0;
  const sim::LengthsResult cold = sim::simulate_lengths(r);
  for (size_t i = 0; i < fused.lengths.size(); ++i) {
    EXPECT_EQ(plain.lengths[i].first_step_s, 1.0);
    EXPECT_EQ(fused.lengths[i].first_step_s, 1.5);
    EXPECT_EQ(cold.lengths[i].epoch_time_s, fused.lengths[i].epoch_time_s);
    EXPECT_EQ(cold.lengths[i].epoch_time_low_s, fused.lengths[i].epoch_time_low_s);
    EXPECT_DOUBLE_EQ(cold.lengths[i].epoch_time_high_s, fused.lengths[i].epoch_time_high_s + 4.0);
    EXPECT_EQ(cold.result.splits[i].step_time_high_s, fused.result.splits[i].step_time_high_s);
  }
}

TEST(LengthsSimTest, TheP99StepCarriesTheNewShapesTheMeanDoes) {
  // A short run on many lengths meets a new shape in most steps: the p99 step pays them as the mean
  // does (exactly new_shape_time_s more than without them): new shapes alone never put it below the mean.
  std::vector<model::LengthBin> bins;
  for (int64_t l = 32; l <= 1024; l += 32) bins.push_back({l, 3});
  sim::Request r = request(8, model::LengthDistribution::from_bins(bins));
  r.workload.stack = model::StackSpec{};  // hf-peft
  r.steps = 10;
  r.hardware.value("new_shape_s", model::StackKind::hf_peft) = 0;
  const sim::LengthsResult without = sim::simulate_lengths(r);
  r.hardware.value("new_shape_s", model::StackKind::hf_peft) = 0.5;
  const sim::LengthsResult with = sim::simulate_lengths(r);
  for (size_t i = 0; i < with.lengths.size(); ++i) {
    const sim::LengthFigures &w = with.lengths[i], &o = without.lengths[i];
    EXPECT_GT(w.new_shape_time_s, 0) << with.result.splits[i].micro_batch;
    EXPECT_NEAR(w.step_time_p99_s - o.step_time_p99_s, w.new_shape_time_s, 1e-12 * w.step_time_p99_s);
    EXPECT_GE(w.step_time_p99_s, with.result.splits[i].step_time_s * (1 - 1e-12));
  }
}
