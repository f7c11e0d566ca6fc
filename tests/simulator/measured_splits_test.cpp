// Measured splits in place of the prediction: their figures, their worst case and the ranking.
#include "simulator/measured_splits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model/architecture.h"
#include "model/error.h"
#include "simulator/note_text.h"
#include "simulator/simulate.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

sim::Request request16() {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.seq_len = 512;
  r.hardware = test_gpu();
  r.effective_batch = 16;
  return r;
}

sim::MeasuredSplit run(int64_t b, double step_s, double reserved) {
  sim::MeasuredSplit m;
  m.micro_batch = b;
  m.accumulation = 16 / b;
  m.step_time_s = step_s;
  m.peak_reserved_bytes = reserved;
  return m;
}

const sim::Split& split(const sim::Result& r, int64_t b) {
  for (const sim::Split& s : r.splits)
    if (s.micro_batch == b) return s;
  throw std::logic_error("no split " + std::to_string(b));
}

}  // namespace

TEST(MeasuredSplitsTest, AMeasuredSplitTakesTheRunsFiguresAndTheOthersKeepThePrediction) {
  sim::Request r = request16();
  const sim::Result predicted = sim::simulate(r);
  r.measured = {run(4, 1.25, 9e9)};
  const sim::Result res = sim::simulate(r);
  const sim::Split& s = split(res, 4);
  EXPECT_TRUE(s.measured);
  EXPECT_FALSE(s.measured_oom);
  EXPECT_EQ(s.step_time_s, 1.25);
  EXPECT_EQ(s.step_time_low_s, 1.25);
  EXPECT_EQ(s.step_time_high_s, 1.25);
  EXPECT_EQ(s.run_time_s, 100 * 1.25);
  EXPECT_DOUBLE_EQ(s.tokens_per_s, 16.0 * 512 / 1.25);
  EXPECT_EQ(s.peak_reserved_bytes, 9e9);
  EXPECT_EQ(s.worst_reserved_bytes, 9e9 * (1 + sim::kMeasuredPeakRepeatability));
  for (size_t i = 0; i < res.splits.size(); ++i) {
    if (res.splits[i].micro_batch == 4) continue;
    EXPECT_FALSE(res.splits[i].measured);
    EXPECT_EQ(res.splits[i].step_time_s, predicted.splits[i].step_time_s);
    EXPECT_EQ(res.splits[i].worst_reserved_bytes, predicted.splits[i].worst_reserved_bytes);
  }
  ASSERT_EQ(res.notes.front().kind, sim::NoteKind::measured);
  const std::string note = sim::note_text(res.notes.front(), r, res);
  EXPECT_NE(note.find("1 split was measured"), std::string::npos) << note;
}

// The boundary: a split the prediction's worst case refuses fits on its measured peak.
TEST(MeasuredSplitsTest, AMeasuredPeakNeedsOnlyItsRepeatabilityNotThePredictionsError) {
  sim::Request r = request16();
  r.hardware.value("context_bytes") = 0;
  const sim::Split p = split(sim::simulate(r), 4);
  ASSERT_GT(p.worst_reserved_bytes, p.peak_reserved_bytes * 1.02);
  // A limit between the measured peak's worst case and the prediction's worst case.
  const double measured_peak = p.peak_reserved_bytes;
  r.memory_limit_bytes = static_cast<int64_t>(measured_peak * (1 + sim::kMeasuredPeakRepeatability)) + 1;
  r.safety_margin = 0.0;
  ASSERT_FALSE(split(sim::simulate(r), 4).fits);
  r.measured = {run(4, p.step_time_s, measured_peak)};
  const sim::Result res = sim::simulate(r);
  EXPECT_TRUE(split(res, 4).fits);
  ASSERT_TRUE(res.recommended);
  EXPECT_EQ(res.splits[*res.recommended].micro_batch, 4);
  // One byte less and the measured split no longer fits.
  r.memory_limit_bytes -= 2;
  EXPECT_FALSE(split(sim::simulate(r), 4).fits);
}

TEST(MeasuredSplitsTest, TheSafetyMarginIsForPredictionsAndTheContextCountsForBoth) {
  sim::Request r = request16();
  const double context = r.hardware.value("context_bytes");
  ASSERT_GT(context, 0);
  r.safety_margin = 0.2;
  r.memory_limit_bytes = 20LL << 30;
  const double limit = 20.0 * (1LL << 30);
  // Under the limit less the context, though above the usable line that keeps the margin free.
  const double peak = (limit - context) / (1 + sim::kMeasuredPeakRepeatability) - 1;
  r.measured = {run(2, 2.0, peak)};
  const sim::Result res = sim::simulate(r);
  ASSERT_GT(peak, res.usable_memory_bytes);
  EXPECT_TRUE(split(res, 2).fits);
  r.measured = {run(2, 2.0, (limit - context) / (1 + sim::kMeasuredPeakRepeatability) + 1e6)};
  EXPECT_FALSE(split(sim::simulate(r), 2).fits);
}

TEST(MeasuredSplitsTest, AMeasuredOutOfMemoryDoesNotFitWhateverThePrediction) {
  sim::Request r = request16();
  ASSERT_TRUE(split(sim::simulate(r), 1).fits);
  sim::MeasuredSplit oom;
  oom.micro_batch = 1;
  oom.accumulation = 16;
  oom.oom = true;
  r.measured = {oom};
  const sim::Result res1 = sim::simulate(r);
  const sim::Split& s = split(res1, 1);
  EXPECT_TRUE(s.measured);
  EXPECT_TRUE(s.measured_oom);
  EXPECT_FALSE(s.fits);
  EXPECT_EQ(s.rank, 0);
  // Beside a run of the same split that fitted, the out-of-memory one still decides.
  r.measured = {run(1, 3.0, 5e9), oom};
  EXPECT_FALSE(split(sim::simulate(r), 1).fits);
}

TEST(MeasuredSplitsTest, RepeatedRunsGiveTheMeanTimeAndTheLargestPeak) {
  sim::Request r = request16();
  r.measured = {run(2, 2.0, 8e9), run(2, 3.0, 9e9), run(2, 4.0, 7e9)};
  const sim::Result res2 = sim::simulate(r);
  const sim::Split& s = split(res2, 2);
  EXPECT_EQ(s.step_time_s, 3.0);
  EXPECT_EQ(s.peak_reserved_bytes, 9e9);
}

TEST(MeasuredSplitsTest, ARunWithoutAPeakKeepsThePredictedMemoryAndItsWorstCase) {
  sim::Request r = request16();
  const sim::Split p = split(sim::simulate(r), 2);
  sim::MeasuredSplit m = run(2, 2.5, 0);
  m.peak_reserved_bytes.reset();
  r.measured = {m};
  const sim::Result res3 = sim::simulate(r);
  const sim::Split& s = split(res3, 2);
  EXPECT_TRUE(s.measured);
  EXPECT_EQ(s.step_time_s, 2.5);
  EXPECT_EQ(s.peak_reserved_bytes, p.peak_reserved_bytes);
  EXPECT_EQ(s.worst_reserved_bytes, p.worst_reserved_bytes);
  EXPECT_EQ(s.fits, p.fits);
}

TEST(MeasuredSplitsTest, RunsThatAreNoSplitOrHaveNoFiguresAreRefused) {
  sim::Request r = request16();
  r.measured = {run(3, 1.0, 1e9)};
  EXPECT_THROW(sim::simulate(r), InputError);
  sim::MeasuredSplit wrong = run(4, 1.0, 1e9);
  wrong.accumulation = 2;
  r.measured = {wrong};
  EXPECT_THROW(sim::simulate(r), InputError);
  r.measured = {run(4, 0.0, 1e9)};
  EXPECT_THROW(sim::simulate(r), InputError);
  r.measured = {run(4, 1.0, -1)};
  EXPECT_THROW(sim::simulate(r), InputError);
}

TEST(MeasuredSplitsTest, DataOfManyLengthsIsNotReplayedYet) {
  sim::Request r = request16();
  r.workload.train.lengths = model::LengthDistribution::from_bins({{100, 30}, {512, 10}});
  r.measured = {run(4, 1.0, 1e9)};
  try {
    sim::simulate_lengths(r, sim::LengthsOptions{});
    FAIL() << "measured splits of data of many lengths were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.quantity(), "measured");
    EXPECT_NE(std::string(e.what()).find("fixed-length data only"), std::string::npos) << e.what();
  }
}
