// The fitter recovers a known device from synthetic measurements and predicts
// configurations it was not fitted on.
#include "calibrate/fit.h"

#include <gtest/gtest.h>

#include "calibrate/fit_internal.h"
#include "calibrate/nnls.h"
#include "model/analytics.h"
#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

model::Workload qwen(int64_t layers, int64_t seq, bool ckpt = false, int64_t rank = 16) {
  model::Workload w;
  w.arch = model::truncated(model::preset("qwen3-1.7b"), layers);
  w.train.seq_len = seq;
  w.train.grad_ckpt = ckpt;
  w.lora.rank = rank;
  return w;
}

// What a perfect runner would measure on `hw`.
calib::Measurement measure(const model::Workload& w, int64_t b, int64_t a, const model::HardwareModel& hw,
                           bool split) {
  const model::CostModel cm(w, hw);
  calib::Measurement m;
  m.workload = w;
  m.micro_batch = b;
  m.accumulation = a;
  m.step_time_s = cm.step_time_s(b, a);
  // The runner reports the mean over a step's micro-batches, all but the first accumulating.
  m.micro_batch_time_s = (cm.micro_batch(b).total_s + (a - 1) * cm.micro_batch(b, true).total_s) / a;
  if (split) {  // measured on a micro-batch with no gradients yet, as the runner does
    m.host_time_s = cm.micro_batch(b).host_s;
    m.device_time_s = cm.micro_batch(b).device_s;
  }
  // The device shows the optimizer's dispatch when the step is host-bound, its kernels otherwise.
  m.optimizer_time_s = cm.step(b, a).host_bound ? cm.optimizer().host_s : cm.optimizer().device_s;
  m.peak_allocated_bytes = cm.memory(b).peak_allocated_bytes;
  m.peak_reserved_bytes = cm.memory(b).peak_reserved_bytes;
  return m;
}

std::vector<calib::Measurement> plan(const model::HardwareModel& hw, bool split) {
  std::vector<calib::Measurement> rows;
  for (int64_t layers : {2, 6})
    for (int64_t seq : {256, 1024})
      for (int64_t b : {1, 2, 4, 8}) rows.push_back(measure(qwen(layers, seq), b, 2, hw, split));
  rows.push_back(measure(qwen(4, 512, true), 4, 1, hw, split));
  // A larger rank, host- and device-bound, separates per-tensor from per-parameter costs.
  rows.push_back(measure(qwen(4, 512, false, 64), 2, 1, hw, split));
  rows.push_back(measure(qwen(4, 1024, false, 64), 16, 1, hw, split));
  return rows;
}

}  // namespace

TEST(NnlsTest, MatchesUnconstrainedSolutionWhenItIsPositive) {
  Eigen::MatrixXd A(4, 2);
  A << 1, 1, 1, 2, 1, 3, 1, 4;
  Eigen::VectorXd b(4);
  b << 3, 5, 7, 9;  // y = 1 + 2x
  const Eigen::VectorXd x = calib::nnls(A, b);
  EXPECT_NEAR(x(0), 1, 1e-9);
  EXPECT_NEAR(x(1), 2, 1e-9);
}

TEST(NnlsTest, ClampsNegativeCoefficientsToZero) {
  Eigen::MatrixXd A(3, 2);
  A << 1, 0, 0, 1, 1, 1;
  Eigen::VectorXd b(3);
  b << 2, -1, 1;
  const Eigen::VectorXd x = calib::nnls(A, b);
  EXPECT_GE(x(1), 0);
  EXPECT_NEAR(x(1), 0, 1e-12);
  EXPECT_NEAR(x(0), 1.5, 1e-9);  // min (x0-2)^2 + (x0-1)^2
}

TEST(NnlsTest, HandlesColumnsOfVeryDifferentScale) {
  Eigen::MatrixXd A(4, 2);
  A << 1, 1e12, 1, 2e12, 1, 3e12, 1, 5e12;
  Eigen::VectorXd b = A * Eigen::Vector2d(1e-3, 4e-15);
  const Eigen::VectorXd x = calib::nnls(A, b);
  EXPECT_NEAR(x(0), 1e-3, 1e-9);
  EXPECT_NEAR(x(1) / 4e-15, 1, 1e-6);
}

TEST(FitTest, RecoversStepTimeOfHeldOutFullDepthModel) {
  const model::HardwareModel truth = test_gpu();
  model::HardwareModel base = truth;
  lorasim::testing::reset_time(base);
  lorasim::testing::reset_memory(base);
  const calib::FitReport rep = calib::fit_profile(plan(truth, true), base);
  EXPECT_LT(rep.time_max_rel, 1e-6);
  EXPECT_TRUE(rep.hardware.calibrated);
  // Full 28-layer model at a sequence length and micro-batches the plan never ran.
  for (int64_t b : {1, 3, 16}) {
    const model::Workload w = qwen(28, 512);
    const double truth_t = model::CostModel(w, truth).step_time_s(b, 4);
    const double fit_t = model::CostModel(w, rep.hardware).step_time_s(b, 4);
    EXPECT_NEAR(fit_t / truth_t, 1.0, 1e-4) << "b=" << b;
  }
}

TEST(FitTest, RecoversTheRecomputeHostShareFromHostBoundCheckpointedRuns) {
  model::HardwareModel truth = test_gpu();
  truth.value("recompute_host_share") = 0.45;
  truth.value("host_per_op_s") = 2e-5;  // an H200 host: the checkpointed runs below are host-bound
  model::HardwareModel base = truth;
  lorasim::testing::reset_time(base);
  std::vector<calib::Measurement> rows = plan(truth, true);
  // Host-bound checkpointed runs, as the calibration's are (no host/device split).
  for (int64_t b : {1, 2}) {
    calib::Measurement m = measure(qwen(4, 128, true), b, 2, truth, false);
    ASSERT_LT(model::CostModel(m.workload, truth).micro_batch(b).device_s, 0.5 * m.micro_batch_time_s);
    rows.push_back(m);
  }
  const calib::FitReport rep = calib::fit_profile(rows, base);
  EXPECT_NEAR(rep.hardware.value("recompute_host_share"), 0.45, 1e-3);
  const model::Workload full = qwen(28, 512, true);
  EXPECT_NEAR(model::CostModel(full, rep.hardware).micro_batch(1).host_s /
                  model::CostModel(full, truth).micro_batch(1).host_s, 1.0, 1e-3);
}

// Fits the memory coefficients from `rows` (measured on test_gpu()) and checks the peaks of
// a model the rows never ran.
void expect_memory_recovered(const std::vector<calib::Measurement>& rows, const model::Workload& w) {
  const model::HardwareModel truth = test_gpu();
  model::HardwareModel base = truth;
  lorasim::testing::reset_memory(base);
  const calib::FitReport rep = calib::fit_profile(rows, base);
  EXPECT_LT(rep.reserved_max_rel, 1e-6);
  for (int64_t b : {1, 8}) {
    const auto t = model::CostModel(w, truth).memory(b);
    const auto f = model::CostModel(w, rep.hardware).memory(b);
    EXPECT_NEAR(f.peak_reserved_bytes / t.peak_reserved_bytes, 1.0, 1e-6) << "b=" << b;
    EXPECT_NEAR(f.peak_allocated_bytes / t.peak_allocated_bytes, 1.0, 1e-6) << "b=" << b;
  }
}

TEST(FitTest, RecoversPeakMemoryOfHeldOutModel) {
  expect_memory_recovered(plan(test_gpu(), true), qwen(28, 2048));
}

TEST(FitTest, RecoversCheckpointedPeakMemory) {
  std::vector<calib::Measurement> rows = plan(test_gpu(), true);
  for (int64_t b : {2, 8}) rows.push_back(measure(qwen(4, 1024, true), b, 2, test_gpu(), true));
  expect_memory_recovered(rows, qwen(28, 2048, true));
}

TEST(FitTest, FitsSynchronousDeviceFromTotalsOnly) {
  model::HardwareModel truth = test_gpu();
  truth.overlap = model::Overlap::sum;
  model::HardwareModel base = truth;
  lorasim::testing::reset_time(base);
  const calib::FitReport rep = calib::fit_profile(plan(truth, false), base);
  EXPECT_LT(rep.time_max_rel, 1e-6);
}

TEST(FitTest, FitsAsynchronousDeviceWithoutHostDeviceSplit) {
  // Only whole-step times (as from HF Trainer logs): the fitter must find which rows are
  // host-bound and which device-bound.
  model::HardwareModel truth = test_gpu();
  truth.value("host_fixed_s") = 0.02;  // host-bound at small micro-batches
  model::HardwareModel base = truth;
  lorasim::testing::reset_time(base);
  std::vector<calib::Measurement> rows = plan(truth, false);
  for (auto& r : rows) {
    r.micro_batch_time_s = calib::kNotMeasured;
    r.optimizer_time_s = calib::kNotMeasured;
  }
  const calib::FitReport rep = calib::fit_profile(rows, base);
  EXPECT_LT(rep.time_rms_rel, 0.02);
}

TEST(FitTest, RecoversOverlapLossFromSteadyStateTimes) {
  model::HardwareModel truth = test_gpu();
  truth.value("overlap_loss") = 0.2;
  model::HardwareModel base = truth;
  lorasim::testing::reset_time(base);
  const calib::FitReport rep = calib::fit_profile(plan(truth, true), base);
  EXPECT_NEAR(rep.hardware.value("overlap_loss"), 0.2, 1e-6);
  EXPECT_LT(rep.time_max_rel, 1e-6);
}

TEST(FitTest, ThreeSplitsOfOneWorkloadPredictTheOthers) {
  // What a user of another framework has: step times of a few splits of their workload.
  model::HardwareModel truth = test_gpu();
  truth.value("host_fixed_s") = 0.15;  // a Python training loop's host cost per micro-batch
  model::HardwareModel base = truth;
  lorasim::testing::reset_time(base);
  lorasim::testing::reset_memory(base);
  const model::Workload w = qwen(28, 512);
  std::vector<calib::Measurement> rows;
  for (int64_t b : {1, 4, 16}) {
    calib::Measurement m = measure(w, b, 16 / b, truth, false);
    m.micro_batch_time_s = m.host_time_s = m.device_time_s = m.optimizer_time_s = calib::kNotMeasured;
    rows.push_back(m);
  }
  const calib::FitReport rep = calib::fit_profile(rows, base);
  for (int64_t b : {2, 8}) {
    const double t = model::CostModel(w, truth).step_time_s(b, 16 / b);
    const double f = model::CostModel(w, rep.hardware).step_time_s(b, 16 / b);
    // 2x8 is host-bound like two of the fitted splits. 8x2 lies near the host/device
    // crossover (host 0.45 s, device 0.35 s here), which three step times place only
    // roughly: the HF + PEFT runs on an H200 showed the same, 8x2 predicted 11% high
    // (bench/results/h200/README.md).
    EXPECT_NEAR(f / t, 1.0, b == 2 ? 0.05 : 0.15) << "b=" << b;
    const double mt = model::CostModel(w, truth).memory(b).peak_reserved_bytes;
    const double mf = model::CostModel(w, rep.hardware).memory(b).peak_reserved_bytes;
    EXPECT_NEAR(mf / mt, 1.0, 0.05) << "b=" << b;
  }
}

TEST(FitTest, TooFewRowsIsACalibrationError) {
  const model::HardwareModel hw = test_gpu();
  std::vector<calib::Measurement> rows = {measure(qwen(2, 256), 1, 1, hw, true)};
  EXPECT_THROW(calib::fit_profile(rows, hw), CalibrationError);
}

TEST(FitTest, OutOfMemoryRowsAreIgnored) {
  const model::HardwareModel hw = test_gpu();
  std::vector<calib::Measurement> rows = plan(hw, true);
  calib::Measurement oom;
  oom.workload = qwen(6, 1024);
  oom.micro_batch = 64;
  oom.oom = true;
  rows.push_back(oom);
  const calib::FitReport rep = calib::fit_profile(rows, hw);
  EXPECT_EQ(rep.time_points, static_cast<int>(rows.size()) - 1);
}

TEST(FitTest, StepDesignColumnsAreTheTablesFeaturesAndReproduceTheModel) {
  // A synchronous device adds host and device, so a step is exactly the design row times
  // the table's thetas; each column of a one-micro-batch step is its coefficient's feature.
  model::HardwareModel hw = test_gpu();
  hw.overlap = model::Overlap::sum;
  const calib::detail::Columns cols = calib::detail::columns(
      {model::Term::host, model::Term::device, model::Term::device_traffic, model::Term::device_kernels,
       model::Term::optimizer_host, model::Term::optimizer_device},
      model::StackKind::lorasim);
  ASSERT_EQ(cols.size(), 14u);  // every time coefficient but the three fitted apart and the prior
  const model::Coefficients c = model::resolve(hw, model::StackKind::lorasim);
  const model::Coefficients basis = calib::detail::linear_basis(c, model::StackKind::lorasim);
  for (const calib::Measurement& m : plan(hw, false)) {
    const calib::detail::Row row{&m, model::features(m.workload, m.micro_batch)};
    const Eigen::VectorXd x = calib::detail::step_regressors(cols, row, basis, true, true);
    double predicted = 0;
    for (size_t k = 0; k < cols.size(); ++k) {
      predicted += x(static_cast<Eigen::Index>(k)) * cols[k]->theta(c);
      if (m.accumulation == 1) {
        EXPECT_EQ(x(static_cast<Eigen::Index>(k)), cols[k]->feature(row.f, basis)) << cols[k]->name;
      }
    }
    EXPECT_NEAR(predicted / m.step_time_s, 1.0, 1e-12) << m.micro_batch << "x" << m.accumulation;
  }
}

TEST(FitTest, FittedThetasSetTheTablesValues) {
  const calib::detail::Columns cols =
      calib::detail::columns({model::Term::device, model::Term::device_traffic, model::Term::device_kernels},
                             model::StackKind::lorasim);
  ASSERT_EQ(cols.size(), 8u);
  Eigen::VectorXd theta(8);
  theta << 1e-4, 1 / 500e12, 256 / 500e12, 0, 1 / 300e12, 1 / 2500e9, 1 / 3000e9, 3e-6;
  model::Coefficients v;
  calib::detail::set_from_theta(cols, theta, v);
  const auto hw = [&v](const char* name) { return model::find_coefficient(name)->of(v); };
  EXPECT_DOUBLE_EQ(hw("device_fixed_s"), 1e-4);
  EXPECT_DOUBLE_EQ(hw("gemm_tflops"), 500);
  EXPECT_DOUBLE_EQ(hw("gemm_half_tokens"), 256);
  EXPECT_EQ(hw("head_tflops"), model::kNoCostRate);  // no cost visible: the term vanishes
  EXPECT_DOUBLE_EQ(hw("attention_tflops"), 300);
  EXPECT_DOUBLE_EQ(hw("memory_gbps"), 2500);
  EXPECT_DOUBLE_EQ(hw("loss_gbps"), 3000);
  EXPECT_DOUBLE_EQ(hw("per_kernel_s"), 3e-6);
  // Only the per-GEMM cost visible: the rate vanishes and n_1/2 carries the whole term.
  theta(1) = 0;
  calib::detail::set_from_theta(cols, theta, v);
  EXPECT_EQ(hw("gemm_tflops"), model::kNoCostRate);
  EXPECT_DOUBLE_EQ(hw("gemm_half_tokens") / (hw("gemm_tflops") * 1e12), 256 / 500e12);
}

TEST(FitTest, RowsOfOneConfigurationAreRefused) {
  // However many, and at whatever accumulation, rows of one workload at one micro-batch
  // identify nothing beyond it.
  const model::HardwareModel hw = test_gpu();
  std::vector<calib::Measurement> rows(5, measure(qwen(28, 512), 1, 16, hw, false));
  rows.push_back(measure(qwen(28, 512), 1, 4, hw, false));
  try {
    calib::fit_profile(rows, hw);
    FAIL() << "fitted rows of one configuration";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("add rows at two or more micro-batches or workloads"), std::string::npos)
        << e.what();
  }
  // A second micro-batch of the same workload is enough to fit.
  rows.push_back(measure(qwen(28, 512), 4, 4, hw, false));
  EXPECT_NO_THROW(calib::fit_profile(rows, hw));
}
