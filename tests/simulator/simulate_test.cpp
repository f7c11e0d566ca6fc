// Split enumeration, memory filtering and recommendation.
#include "simulator/simulate.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "simulator/note_text.h"
#include "simulator/splits.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {
sim::Request request(int64_t B, int64_t seq = 512) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.seq_len = seq;
  r.hardware = test_gpu();
  r.effective_batch = B;
  return r;
}
}  // namespace

TEST(SimulateTest, DivisorsAreAllSplitsAscending) {
  EXPECT_EQ(sim::divisors(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(sim::divisors(12), (std::vector<int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(sim::divisors(16), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(sim::divisors(1024).size(), 11u);
  EXPECT_EQ(sim::divisors(97), (std::vector<int64_t>{1, 97}));
}

TEST(SimulateTest, EverySplitMultipliesToTheEffectiveBatch) {
  const sim::Result r = sim::simulate(request(24));
  ASSERT_EQ(r.splits.size(), 8u);
  for (const auto& s : r.splits) EXPECT_EQ(s.micro_batch * s.accumulation, 24);
}

TEST(SimulateTest, RecommendsTheFastestSplitThatFits) {
  const sim::Result r = sim::simulate(request(64));
  ASSERT_TRUE(r.recommended.has_value());
  const sim::Split& best = r.splits[*r.recommended];
  EXPECT_EQ(best.rank, 1);
  EXPECT_TRUE(best.fits);
  for (const auto& s : r.splits) {
    if (s.fits) EXPECT_LE(best.step_time_s, s.step_time_s);
    else EXPECT_EQ(s.rank, 0);
  }
}

TEST(SimulateTest, HostOverheadDominatedProfilePicksLargestMicroBatchThatFits) {
  sim::Request r = request(64);
  r.hardware.value("host_fixed_s") = 0.2;  // like HF + PEFT: 0.2 s of Python per micro-batch
  r.memory_limit_bytes = 40LL << 30;
  const sim::Result res = sim::simulate(r);
  ASSERT_TRUE(res.recommended.has_value());
  int64_t largest_fitting = 0;
  for (const auto& s : res.splits)
    if (s.fits) largest_fitting = std::max(largest_fitting, s.micro_batch);
  EXPECT_EQ(res.splits[*res.recommended].micro_batch, largest_fitting);
  EXPECT_LT(largest_fitting, 64);  // the limit must bind for the test to mean something
}

TEST(SimulateTest, MemoryLimitAndMarginDecideFit) {
  sim::Request r = request(16);
  r.memory_limit_bytes = 20LL << 30;
  r.safety_margin = 0.1;
  const sim::Result res = sim::simulate(r);
  EXPECT_DOUBLE_EQ(res.memory_limit_bytes, 20.0 * (1LL << 30));
  EXPECT_DOUBLE_EQ(res.usable_memory_bytes, 0.9 * 20.0 * (1LL << 30) - r.hardware.value("context_bytes"));
  for (const auto& s : res.splits) EXPECT_EQ(s.fits, s.worst_reserved_bytes <= res.usable_memory_bytes);
}

TEST(SimulateTest, NothingFitsGivesNoRecommendationAndAHint) {
  sim::Request r = request(8);
  r.memory_limit_bytes = 1LL << 30;
  const sim::Result res = sim::simulate(r);
  EXPECT_FALSE(res.recommended.has_value());
  ASSERT_FALSE(res.notes.empty());
  EXPECT_EQ(res.notes.back().kind, sim::NoteKind::no_split_fits);
  EXPECT_EQ(res.notes.back().values, std::vector<double>{res.usable_memory_bytes});
  const std::string usable = std::to_string(static_cast<int64_t>(res.usable_memory_bytes / (1 << 20))) + " MiB";
  EXPECT_EQ(sim::note_text(res.notes.back(), r, res), "no split fits in " + usable + " usable, not even micro-batch 1");
  // The advice is the CLI's (cli/no_fit_advice.h): one place, which knows checkpointing was on or weighed.
  for (const std::string& n : sim::note_texts(r, res)) EXPECT_EQ(n.find("checkpointing"), std::string::npos) << n;
}

TEST(SimulateTest, RunTimeAndThroughputFollowStepTime) {
  sim::Request r = request(8, 1024);
  r.steps = 250;
  for (const auto& s : sim::simulate(r).splits) {
    EXPECT_DOUBLE_EQ(s.run_time_s, 250 * s.step_time_s);
    EXPECT_DOUBLE_EQ(s.tokens_per_s, 8 * 1024 / s.step_time_s);
  }
}

TEST(SimulateTest, AHostBoundRecommendationSaysItsTimeIsLessRepeatable) {
  auto host_note = [](const sim::Result& res) {
    for (const auto& n : res.notes)
      if (n.kind == sim::NoteKind::recommended_host_bound) return true;
    return false;
  };
  sim::Request r = request(1, 128);  // one short sequence on a 28-layer model: dispatch-bound
  sim::Result res = sim::simulate(r);
  ASSERT_TRUE(res.recommended.has_value());
  ASSERT_TRUE(res.splits[*res.recommended].host_bound);
  EXPECT_TRUE(host_note(res));
  r = request(16, 4096);  // 64k tokens a step: the GPU sets the pace
  res = sim::simulate(r);
  ASSERT_TRUE(res.recommended.has_value());
  ASSERT_FALSE(res.splits[*res.recommended].host_bound);
  EXPECT_FALSE(host_note(res));
}

TEST(SimulateTest, EachSplitCarriesItsStepTimesRange) {
  sim::Request r = request(16);
  r.workload.stack.kind = model::StackKind::hf_peft;
  r.hardware.value("host_spread", model::StackKind::hf_peft) = 0.25;
  r.hardware.value("device_spread", model::StackKind::hf_peft) = 0.05;
  const model::CostModel cost(r.workload, r.hardware);
  for (const auto& s : sim::simulate(r).splits) {
    const model::StepTime t = cost.step(s.micro_batch, s.accumulation);
    EXPECT_EQ(s.step_time_low_s, t.low_s);
    EXPECT_EQ(s.step_time_high_s, t.high_s);
    EXPECT_LT(s.step_time_low_s, s.step_time_s);
    EXPECT_GT(s.step_time_high_s, s.step_time_s);
    if (s.host_bound) {
      EXPECT_DOUBLE_EQ(s.step_time_high_s, 1.25 * s.step_time_s);
    }
  }
}

TEST(SimulateTest, HostBoundSplitsOfTheHfPeftStackNoteTheirSpread) {
  sim::Request r = request(16, 128);  // short sequences: the smaller micro-batches are dispatch-bound
  auto spread_note = [&r](const sim::Result& res) -> std::string {
    for (const auto& n : sim::note_texts(r, res))
      if (n.find("host_spread") != std::string::npos) return n;
    return "";
  };
  r.workload.stack.kind = model::StackKind::hf_peft;
  r.hardware.value("host_spread", model::StackKind::hf_peft) = 0.27;
  sim::Result res = sim::simulate(r);
  ASSERT_TRUE(res.splits.front().host_bound);
  EXPECT_NE(spread_note(res).find("±27%"), std::string::npos) << spread_note(res);
  r.workload.stack = model::StackSpec::lorasim_runner();  // the note is the Python stack's
  EXPECT_EQ(spread_note(sim::simulate(r)), "");
  r = request(4, 8192);  // 8k tokens in every micro-batch: the GPU sets the pace of all
  r.workload.stack.kind = model::StackKind::hf_peft;
  res = sim::simulate(r);
  for (const auto& s : res.splits) ASSERT_FALSE(s.host_bound) << s.micro_batch;
  EXPECT_EQ(spread_note(res), "");
}

TEST(SimulateTest, PriorProfileIsFlagged) {
  sim::Request r = request(4);
  r.hardware.calibrated = false;
  const sim::Result res = sim::simulate(r);
  ASSERT_FALSE(res.notes.empty());
  EXPECT_EQ(res.notes.front().kind, sim::NoteKind::prior_profile);
  EXPECT_NE(sim::note_text(res.notes.front(), r, res).find("prior"), std::string::npos);
}

TEST(SimulateTest, InvalidRequestsAreRefused) {
  sim::Request r = request(0);
  EXPECT_THROW(sim::simulate(r), InputError);
  r = request(4);
  r.steps = 0;
  EXPECT_THROW(sim::simulate(r), InputError);
  r = request(4);
  r.hardware.bf16_supported = false;
  EXPECT_THROW(sim::simulate(r), InputError);
  r.workload.train.precision = model::Precision::fp16;
  EXPECT_NO_THROW(sim::simulate(r));
}

TEST(SimulateTest, FitIsDecidedOnTheWorstCaseNotTheExpectedPeak) {
  sim::Request r = request(8, 1024);
  r.safety_margin = 0;
  r.hardware.value("context_bytes") = 0;
  const sim::Split probe = sim::simulate(r).splits.back();  // 8 x 1
  ASSERT_GT(probe.worst_reserved_bytes, probe.peak_reserved_bytes);
  // A limit between the expected peak and the worst case: the split is predicted not to fit.
  r.memory_limit_bytes = static_cast<int64_t>(0.5 * (probe.peak_reserved_bytes + probe.worst_reserved_bytes));
  EXPECT_FALSE(sim::simulate(r).splits.back().fits);
  r.memory_limit_bytes = static_cast<int64_t>(probe.worst_reserved_bytes) + 1;
  EXPECT_TRUE(sim::simulate(r).splits.back().fits);
}

TEST(SimulateTest, EffectiveBatchUpToTheBoundIsSimulatedAndAboveItRefused) {
  // 2^40 has 41 divisors; its splits come back at once, the largest micro-batch included.
  sim::Request r = request(sim::kMaxEffectiveBatch, 1);
  r.workload.arch = model::preset("tiny");
  const sim::Result res = sim::simulate(r);
  ASSERT_EQ(res.splits.size(), 41u);
  EXPECT_EQ(res.splits.back().micro_batch, sim::kMaxEffectiveBatch);
  // Above the bound (INT64_MAX would enumerate for a minute) it is refused before any work.
  r.effective_batch = sim::kMaxEffectiveBatch + 1;
  EXPECT_THROW(sim::simulate(r), InputError);
  r.effective_batch = INT64_MAX;
  EXPECT_THROW(sim::simulate(r), InputError);
}

TEST(SimulateTest, TokensPerStepBeyondInt64AreRefused) {
  // 16 x (2^63 - 1) tokens wrapped to -16 and was printed.
  EXPECT_THROW(sim::simulate(request(16, INT64_MAX)), InputError);
  EXPECT_THROW(sim::simulate(request(int64_t{1} << 40, int64_t{1} << 23)), InputError);  // exactly 2^63
}

TEST(SimulateTest, MemoryBeyondInt64BytesIsRefused) {
  // 2^40 sequences of 2048 tokens: 2^51 tokens fit, but their logits alone need ~4e21 bytes,
  // which the reports' int64 byte fields cannot hold.
  EXPECT_THROW(sim::simulate(request(int64_t{1} << 40, 2048)), InputError);
  // One sequence of 2^43 tokens: its saved activations alone are beyond 2^63 bytes.
  EXPECT_THROW(sim::simulate(request(1, int64_t{1} << 43)), InputError);
}

TEST(SimulateTest, AMemoryLimitThatLeavesNothingUsableIsRefused) {
  sim::Request r = request(4);
  r.hardware.value("context_bytes") = 512LL << 20;
  r.safety_margin = 0.05;
  r.memory_limit_bytes = 512LL << 20;  // 95% of it is below the context
  try {
    sim::simulate(r);
    FAIL() << "a limit below the CUDA context was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA context"), std::string::npos) << e.what();
  }
  r.memory_limit_bytes = 540LL << 20;  // 513 MiB after the margin: 1 MiB usable, nothing fits
  const sim::Result res = sim::simulate(r);
  EXPECT_GT(res.usable_memory_bytes, 0);
  EXPECT_FALSE(res.recommended.has_value());
}
