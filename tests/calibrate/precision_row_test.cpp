// What a run records as its precision: the one it trained in. The CPU runner trains in fp32,
// so a library user who asks for bf16 there gets rows that say fp32, not bf16.
#include <gtest/gtest.h>

#include "calibrate/calibration.h"
#include "calibrate/runner.h"
#include "model/architecture.h"

namespace lorasim::calib {
namespace {

model::Workload tiny_bf16() {
  model::Workload w;
  w.arch = model::truncated(model::preset("tiny"), 1);
  w.lora.rank = 4;
  w.train.seq_len = 16;
  w.train.precision = model::Precision::bf16;
  return w;
}

TEST(PrecisionRowTest, TrainerOnTheCpuReportsTheFp32ItRuns) {
  const model::Workload w = tiny_bf16();
  Trainer trainer(w, "cpu");
  EXPECT_EQ(trainer.workload().train.precision, model::Precision::fp32);
  RunSpec spec;
  spec.workload = w;  // still bf16, as asked: the same model, so the run is accepted
  spec.warmup_steps = 0;
  spec.measure_steps = 1;
  const RunResult r = trainer.run(spec);
  ASSERT_FALSE(r.oom) << r.error;
  EXPECT_EQ(r.precision, model::Precision::fp32);
}

TEST(PrecisionRowTest, CalibrationRowsOnTheCpuSayFp32WhenBf16WasAsked) {
  CalibrationOptions opt;
  opt.device = "cpu";
  opt.reference = tiny_bf16();
  opt.depths = {1};
  opt.seq_lens = {16};
  opt.max_tokens = 16;
  opt.measure_steps = 1;
  struct FirstRow {};  // stops the calibration after the first measured row, before the fit
  model::Precision recorded = model::Precision::bf16;
  try {
    run_calibration(opt, model::HardwareModel{}, [&](const CalibrationProgress& p) {
      if (!p.result) return;
      recorded = p.result->workload.train.precision;
      throw FirstRow{};
    });
    FAIL() << "the calibration made no run";
  } catch (const FirstRow&) {
  }
  EXPECT_EQ(recorded, model::Precision::fp32);
}

TEST(PrecisionRowTest, InterruptMidRunStopsTheCalibrationWithoutAFit) {
  CalibrationOptions opt;
  opt.device = "cpu";
  opt.reference = tiny_bf16();
  opt.depths = {1};
  opt.seq_lens = {16};
  opt.max_tokens = 16;
  int polls = 0;
  bool progressed = false;
  try {
    run_calibration(opt, model::HardwareModel{}, [&](const CalibrationProgress&) { progressed = true; },
                    [&] { return ++polls == 3; });  // inside the first run
    FAIL() << "the calibration ignored the stop";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted after 0 of"), std::string::npos) << e.what();
  }
  EXPECT_EQ(polls, 3);
  EXPECT_FALSE(progressed) << "the interrupted run was reported as finished";
}

}  // namespace
}  // namespace lorasim::calib
