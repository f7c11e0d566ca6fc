// The interconnect fit: rows timed by the ring model give back its latency and bandwidth, rows
// that cannot separate them are refused, CPU rows become link gloo-cpu, and the rows' file
// round-trips and refuses what it cannot read.
#include "calibrate/fit_interconnect.h"

#include <gtest/gtest.h>

#include "calibrate/allreduce_rows.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

std::vector<AllreduceRow> ring_rows(double latency_s, double gbps, int64_t processes, const std::string& device) {
  std::vector<AllreduceRow> rows;
  for (int64_t bytes = 1024; bytes <= (int64_t{64} << 20); bytes *= 4) {
    const double n = static_cast<double>(processes);
    const double t = latency_s * 2 * (n - 1) + 2 * (n - 1) / n * static_cast<double>(bytes) / (gbps * 1e9);
    rows.push_back({device == "cpu" ? "gloo" : "nccl", device, processes, bytes, t});
  }
  return rows;
}

TEST(FitInterconnectTest, RecoversTheRingModelsLatencyAndBandwidth) {
  for (const int64_t n : {2, 4, 8}) {
    const InterconnectFit fit = fit_interconnect(ring_rows(7e-6, 180, n, "NVIDIA H200"));
    EXPECT_NEAR(fit.allreduce_latency_s, 7e-6, 7e-6 * 1e-9) << n;
    EXPECT_NEAR(fit.allreduce_gbps, 180, 180 * 1e-9) << n;
    EXPECT_LT(fit.max_rel_error, 1e-9) << n;
    EXPECT_EQ(fit.rows, 9);
    EXPECT_EQ(fit.min_bytes, 1024);
    EXPECT_EQ(fit.max_bytes, int64_t{64} << 20);
  }
}

TEST(FitInterconnectTest, ReproducesTheRowsItWasFittedTo) {
  const auto rows = ring_rows(3e-5, 4.5, 2, "cpu");
  const InterconnectFit fit = fit_interconnect(rows);
  for (const auto& r : rows) EXPECT_NEAR(ring_time_s(fit, r.processes, r.bytes), r.time_s, 1e-9 * r.time_s);
}

TEST(FitInterconnectTest, OneSizeOrTimesThatDoNotGrowAreRefused) {
  auto rows = ring_rows(1e-5, 10, 2, "cpu");
  EXPECT_THROW(fit_interconnect({rows[0], rows[0]}), CalibrationError);
  for (auto& r : rows) r.time_s = 1e-3;  // flat: latency only, no bandwidth
  EXPECT_THROW(fit_interconnect(rows), CalibrationError);
  EXPECT_THROW(fit_interconnect({}), CalibrationError);
  auto mixed = ring_rows(1e-5, 10, 2, "cpu");
  mixed.back().backend = "nccl";
  EXPECT_THROW(fit_interconnect(mixed), ConfigError);
}

TEST(FitInterconnectTest, CpuRowsAreRecordedAsGlooCpuNotTheDeclaredGpuLink) {
  const auto cpu = ring_rows(3e-5, 4.5, 2, "cpu");
  const model::Interconnect ic = to_interconnect(fit_interconnect(cpu), cpu, model::Link::nvlink, "test");
  EXPECT_EQ(ic.link, model::Link::gloo_cpu);
  EXPECT_TRUE(ic.calibrated);
  EXPECT_EQ(ic.source, "test");
  const auto gpu = ring_rows(5e-6, 300, 2, "NVIDIA H200");
  EXPECT_EQ(to_interconnect(fit_interconnect(gpu), gpu, model::Link::nvlink, "").link, model::Link::nvlink);
}

TEST(AllreduceRowsTest, RoundTripAndRefusals) {
  const std::string text = std::string(kAllreduceCsvHeader) + "\ngloo,cpu,2,1024,1.5e-05\nnccl,NVIDIA H200,2,4096,2e-05\n";
  const auto rows = parse_allreduce_csv(text, "r.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].device, "NVIDIA H200");
  EXPECT_EQ(rows[1].bytes, 4096);
  EXPECT_DOUBLE_EQ(rows[0].time_s, 1.5e-5);
  auto error_of = [](const std::string& t) {
    try {
      parse_allreduce_csv(t, "r.csv");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string h = std::string(kAllreduceCsvHeader) + "\n";
  EXPECT_NE(error_of("bytes,time_s\n1,2\n").find("r.csv:1: the header is"), std::string::npos);
  EXPECT_NE(error_of(h).find("no rows"), std::string::npos);
  EXPECT_NE(error_of(h + "gloo,cpu,1,1024,1e-5\n").find("r.csv:2: processes must be"), std::string::npos);
  EXPECT_NE(error_of(h + "gloo,cpu,2,0,1e-5\n").find("bytes must be"), std::string::npos);
  EXPECT_NE(error_of(h + "gloo,cpu,2,1024,-1\n").find("time_s must be positive"), std::string::npos);
  EXPECT_NE(error_of(h + "gloo,cpu,2,1024,fast\n").find("time_s 'fast' is not a number"), std::string::npos);
  EXPECT_NE(error_of(h + "gloo,cpu,2,1024\n").find("expected 5 columns"), std::string::npos);
}

}  // namespace
}  // namespace lorasim::calib
