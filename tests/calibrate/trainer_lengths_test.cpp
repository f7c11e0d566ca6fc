// The Trainer on a lengths file (CPU, tiny preset): its timed micro-batches are the sampler's,
// recorded as the histogram of their widths, their real tokens and the shapes new to the process
// among them, and the row they make carries them.
#include <gtest/gtest.h>

#include <set>

#include "calibrate/convert.h"
#include "calibrate/length_sampler.h"
#include "calibrate/runner.h"
#include "calibrate/seen_shapes.h"
#include "model/architecture.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

model::Workload lengths_workload(const model::Padding& padding) {
  model::Workload w;
  w.arch = model::preset("tiny");
  w.lora.rank = 8;
  w.train.precision = model::Precision::fp32;
  w.train.lengths = model::LengthDistribution::from_bins({{9, 6}, {20, 5}, {48, 2}}).truncated(40);
  w.train.padding = padding;
  w.train.seq_len = 40;
  return w;
}

RunSpec lengths_spec(const model::Workload& w, uint64_t data_seed) {
  RunSpec spec;
  spec.workload = w;
  spec.micro_batch = 2;
  spec.accumulation = 3;
  spec.warmup_steps = 1;
  spec.measure_steps = 2;
  spec.data_seed = data_seed;
  return spec;
}

TEST(TrainerLengthsTest, TheTimedMicroBatchesAreTheSamplersAndTheirWidthsAreRecorded) {
  for (const model::Padding p : {model::Padding{}, model::Padding::multiple_of(16)}) {
    const model::Workload w = lengths_workload(p);
    Trainer trainer(w, "cpu", 1);
    const RunResult r = trainer.run(lengths_spec(w, 11));
    ASSERT_FALSE(r.oom) << r.error;
    // The same sampler, seeded alike: the warm-up's 3 micro-batches, then the 6 timed ones.
    LengthSampler s(*w.train.lengths, p, 11);
    for (int i = 0; i < 3; ++i) s.next(2);
    model::PaddedWidthCounter widths;
    double real = 0;
    for (int i = 0; i < 6; ++i) {
      const SampledMicroBatch mb = s.next(2);
      widths.add(mb.width_tokens);
      real += static_cast<double>(mb.real_tokens());
    }
    EXPECT_EQ(r.collation, model::padding_name(p));
    EXPECT_EQ(r.padded_lengths, widths.widths());
    EXPECT_EQ(r.real_tokens, real / 6);
    EXPECT_EQ(r.seq_len, model::largest_width_tokens(r.padded_lengths));
    for (const model::PaddedWidth& pw : r.padded_lengths) EXPECT_LE(pw.width_tokens, p == model::Padding{} ? 40 : 48);

    const Measurement m = to_measurement(w, r);
    EXPECT_EQ(m.collation, r.collation);
    EXPECT_EQ(m.padded_lengths, r.padded_lengths);
    EXPECT_EQ(m.real_tokens, r.real_tokens);
    EXPECT_EQ(m.workload.train.seq_len, r.seq_len);
    EXPECT_FALSE(m.workload.train.lengths.has_value());
  }
}

// The timed micro-batches' widths that no earlier micro-batch of the sampler had (every one is 2
// rows), per timed step: what a fresh process's first run of `spec` counts.
double new_widths_per_step(const model::Workload& w, const RunSpec& spec) {
  LengthSampler s(*w.train.lengths, w.train.padding, spec.data_seed);
  std::set<int64_t> met;
  for (int i = 0; i < spec.warmup_steps * spec.accumulation; ++i) met.insert(s.next(spec.micro_batch).width_tokens);
  int64_t fresh = 0;
  for (int i = 0; i < spec.measure_steps * spec.accumulation; ++i)
    fresh += met.insert(s.next(spec.micro_batch).width_tokens).second ? 1 : 0;
  return static_cast<double>(fresh) / spec.measure_steps;
}

TEST(TrainerLengthsTest, ARunRecordsTheTimedMicroBatchesOfShapesNewToTheProcess) {
  forget_shapes();
  const model::Workload w = lengths_workload(model::Padding::multiple_of(8));
  const RunSpec spec = lengths_spec(w, 11);
  const double expected = new_widths_per_step(w, spec);
  ASSERT_GT(expected, 0.0);  // the seed's timed steps meet widths the warm-up did not
  ASSERT_LT(expected, 3.0);  // and widths it did
  Trainer trainer(w, "cpu", 1);
  const RunResult r = trainer.run(spec);
  ASSERT_FALSE(r.oom) << r.error;
  ASSERT_GT(r.padded_lengths.size(), 1u);
  EXPECT_EQ(r.new_shapes_per_step, expected);
  EXPECT_EQ(to_measurement(w, r).new_shapes_per_step, expected);

  // The same micro-batches again, on this trainer and on a shallower model of the same width:
  // every shape met already. A model of another LoRA rank has its own kernels' shapes.
  EXPECT_EQ(trainer.run(spec).new_shapes_per_step, 0.0);
  model::Workload shallower = w;
  shallower.arch = model::truncated(w.arch, 1);
  Trainer shallow(shallower, "cpu", 1);
  EXPECT_EQ(shallow.run(lengths_spec(shallower, 11)).new_shapes_per_step, 0.0);
  model::Workload other_rank = w;
  other_rank.lora.rank = 4;
  Trainer other(other_rank, "cpu", 1);
  EXPECT_EQ(other.run(lengths_spec(other_rank, 11)).new_shapes_per_step, expected);
}

TEST(TrainerLengthsTest, ARunOfFixedLengthsHasNoNewShapes) {
  forget_shapes();
  model::Workload w = lengths_workload(model::Padding{});
  w.train.lengths.reset();
  w.train.seq_len = 16;
  Trainer trainer(w, "cpu", 1);
  RunSpec spec = lengths_spec(w, 0);
  spec.warmup_steps = 0;  // its one shape is new to the process, yet the row of one width says 0
  const RunResult r = trainer.run(spec);
  ASSERT_FALSE(r.oom) << r.error;
  EXPECT_EQ(r.new_shapes_per_step, 0.0);
  EXPECT_EQ(to_measurement(w, r).new_shapes_per_step, 0.0);
}

TEST(TrainerLengthsTest, ACollationTheRunnerDoesNotPadIsRefused) {
  model::Workload w = lengths_workload(model::Padding{model::PaddingMode::packed, 0});
  Trainer trainer(w, "cpu", 1);
  RunSpec spec;
  spec.workload = w;
  EXPECT_THROW(trainer.run(spec), InputError);
}

}  // namespace
}  // namespace lorasim::calib
