// The conversions every command shares: a run into a measurement row, a fit's residuals into
// the errors a profile claims. Built without LibTorch: the measured run is not the runner's.
#include "calibrate/convert.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/architecture.h"

namespace lorasim::calib {
namespace {

model::Workload tiny_workload() {
  model::Workload w;
  w.arch = model::truncated(model::preset("tiny"), 1);
  w.train.seq_len = 64;
  w.train.precision = model::Precision::fp32;
  return w;
}

RunResult finished_run() {
  RunResult r;
  r.micro_batch = 4;
  r.accumulation = 2;
  r.step_time_s = 0.5;
  r.micro_batch_time_s = 0.2;
  r.host_time_s = 0.05;
  r.device_time_s = 0.15;
  r.optimizer_time_s = 0.1;
  r.peak_allocated_bytes = 1000;
  r.peak_reserved_bytes = 2048;
  return r;
}

TEST(ConvertTest, RunBecomesAMeasurementOfItsWorkloadAndSplit) {
  const Measurement m = to_measurement(tiny_workload(), finished_run());
  EXPECT_EQ(m.workload.arch.num_layers, 1);
  EXPECT_EQ(m.workload.train.seq_len, 64);
  EXPECT_EQ(m.micro_batch, 4);
  EXPECT_EQ(m.accumulation, 2);
  EXPECT_FALSE(m.oom);
  EXPECT_EQ(m.step_time_s, 0.5);
  EXPECT_EQ(m.micro_batch_time_s, 0.2);
  EXPECT_EQ(m.host_time_s, 0.05);
  EXPECT_EQ(m.device_time_s, 0.15);
  EXPECT_EQ(m.optimizer_time_s, 0.1);
  EXPECT_EQ(m.peak_allocated_bytes, 1000.0);
  EXPECT_EQ(m.peak_reserved_bytes, 2048.0);
}

TEST(ConvertTest, TheRunnersRowsSayWhatItRanOnAndWhatTheModelSaw) {
  std::vector<Measurement> rows = {to_measurement(tiny_workload(), finished_run())};
  EXPECT_EQ(rows[0].collation, "fixed");  // fixed-length random tokens
  EXPECT_EQ(rows[0].real_tokens, 4.0 * 64);
  set_device(rows, "NVIDIA H200", true, 150754820096.0);
  EXPECT_EQ(rows[0].device, "NVIDIA H200");
  EXPECT_EQ(rows[0].device_memory_bytes, 150754820096.0);
  EXPECT_EQ(rows[0].processes, 1);
  // The CPU is "cpu" whatever its model name: rows name devices as torch does.
  set_device(rows, "Intel(R) Xeon(R) Platinum 8480+", false, 0);
  EXPECT_EQ(rows[0].device, "cpu");
  EXPECT_FALSE(measured(rows[0].device_memory_bytes));
}

TEST(ConvertTest, ALargeResidualIsWarnedWithItsLikelyCause) {
  FitReport fit;
  fit.time_points = 12;
  fit.time_rms_rel = 0.15;  // at the threshold: quiet
  EXPECT_EQ(residual_warning(fit, true, 3), "");
  fit.time_rms_rel = 0.74;
  fit.time_max_rel = 1.2;
  EXPECT_EQ(residual_warning(fit, true, 3),
            "the fit misses the measured step times by 74% rms (max 120%) over 12 runs: the timings were noisy, "
            "likely the CPU's threads: OMP/torch threads fighting over shared or busy cores (set OMP_NUM_THREADS to "
            "the free physical cores and run nothing else), or too few timed steps (--steps 3; try 8 or more); the "
            "profile is written, its expected error raised to match: calibrate again when the machine is quiet");
  const std::string gpu = residual_warning(fit, false, 8);
  EXPECT_NE(gpu.find("likely a busy host: another process on this GPU or its CPU cores;"), std::string::npos) << gpu;
  EXPECT_EQ(gpu.find("too few"), std::string::npos) << gpu;
}

TEST(ConvertTest, OutOfMemoryRunMeasuresNothing) {
  RunResult r = finished_run();
  r.oom = true;
  const Measurement m = to_measurement(tiny_workload(), r);
  EXPECT_TRUE(m.oom);
  EXPECT_EQ(m.micro_batch, 4);
  for (double v : {m.step_time_s, m.micro_batch_time_s, m.host_time_s, m.device_time_s, m.optimizer_time_s,
                   m.peak_allocated_bytes, m.peak_reserved_bytes})
    EXPECT_TRUE(std::isnan(v)) << v;
}

TEST(ConvertTest, ExpectedErrorsAreTwiceTheFitResidualsAboveTheFloors) {
  FitReport fit;
  fit.time_rms_rel = 0.125;
  fit.reserved_rms_rel = 0.0625;
  model::HardwareModel hw;
  set_expected_errors(hw, fit);
  EXPECT_EQ(hw.value("expected_time_error"), 0.25);
  EXPECT_EQ(hw.value("expected_memory_error"), 0.125);

  fit.time_rms_rel = 0.01;  // a near-perfect fit still claims the floors
  fit.reserved_rms_rel = 0;
  set_expected_errors(hw, fit);
  EXPECT_EQ(hw.value("expected_time_error"), kMinExpectedTimeError);
  EXPECT_EQ(hw.value("expected_memory_error"), kMinExpectedMemoryError);
}

}  // namespace
}  // namespace lorasim::calib
