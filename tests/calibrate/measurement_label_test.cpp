// The labels that name measurement rows: the fit's residuals, the calibration plan and the
// validation's groups.
#include "calibrate/measurement_label.h"

#include <gtest/gtest.h>

#include "model/architecture.h"

namespace lorasim::calib {
namespace {

Measurement tiny_row() {
  Measurement m;
  m.workload.arch = model::truncated(model::preset("tiny"), 1);
  m.workload.train.seq_len = 64;
  m.workload.train.precision = model::Precision::fp32;
  m.workload.stack = model::StackSpec::lorasim_runner();
  m.micro_batch = 4;
  m.accumulation = 2;
  return m;
}

TEST(MeasurementLabelTest, WorkloadLabelNamesEverythingThatChangesThePrediction) {
  Measurement m = tiny_row();
  EXPECT_EQ(workload_label(m), "tiny L=1 s=64 r=16 q,k,v,o,gate,up,down fp32 B=8 lorasim");
  m.workload.train.grad_ckpt = true;
  m.workload.lora.rank = 8;
  m.accumulation = 4;
  EXPECT_EQ(workload_label(m), "tiny L=1 s=64 ckpt r=8 q,k,v,o,gate,up,down fp32 B=16 lorasim");
}

TEST(MeasurementLabelTest, RunLabelNamesTheSplitAndOnlyANonDefaultRank) {
  Measurement m = tiny_row();
  EXPECT_EQ(run_label(m), "tiny L=1 s=64 b=4 a=2");
  m.workload.train.grad_ckpt = true;
  m.workload.lora.rank = 8;
  EXPECT_EQ(run_label(m), "tiny L=1 s=64 b=4 a=2 ckpt r=8");
  // The calibration plan's form: the reference model unnamed, the rank only where overridden.
  EXPECT_EQ(run_label("", 3, 256, 16, 1, false, 0), "L=3 s=256 b=16 a=1");
  EXPECT_EQ(run_label("qwen3-8b", 1, 1024, 2, 1, true, 16), "qwen3-8b L=1 s=1024 b=2 a=1 ckpt r=16");
}

}  // namespace
}  // namespace lorasim::calib
