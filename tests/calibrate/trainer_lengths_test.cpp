// The Trainer on a lengths file (CPU, tiny preset): its timed micro-batches are the sampler's,
// recorded as the histogram of their widths and their real tokens, and the row they make
// carries them.
#include <gtest/gtest.h>

#include "calibrate/convert.h"
#include "calibrate/length_sampler.h"
#include "calibrate/runner.h"
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

TEST(TrainerLengthsTest, TheTimedMicroBatchesAreTheSamplersAndTheirWidthsAreRecorded) {
  for (const model::Padding p : {model::Padding{}, model::Padding::multiple_of(16)}) {
    const model::Workload w = lengths_workload(p);
    Trainer trainer(w, "cpu", 1);
    RunSpec spec;
    spec.workload = w;
    spec.micro_batch = 2;
    spec.accumulation = 3;
    spec.warmup_steps = 1;
    spec.measure_steps = 2;
    spec.data_seed = 11;
    const RunResult r = trainer.run(spec);
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

TEST(TrainerLengthsTest, ACollationTheRunnerDoesNotPadIsRefused) {
  model::Workload w = lengths_workload(model::Padding{model::PaddingMode::packed, 0});
  Trainer trainer(w, "cpu", 1);
  RunSpec spec;
  spec.workload = w;
  EXPECT_THROW(trainer.run(spec), InputError);
}

}  // namespace
}  // namespace lorasim::calib
