// Anchored fits: step times and peaks of a few runs scale the base profile's groups, move only
// what they identify, and never write "no cost" rates or zero scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "calibrate/fit.h"
#include "model/architecture.h"
#include "model/coefficients.h"
#include "model/cost_model.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

model::Workload workload(const char* preset, int64_t layers, int64_t seq) {
  model::Workload w;
  w.arch = model::truncated(model::preset(preset), layers);
  w.train.seq_len = seq;
  return w;
}

bool is_host(const model::Coefficient& c) {
  return c.term == model::Term::host || c.term == model::Term::optimizer_host;
}
bool is_device(const model::Coefficient& c) {
  return c.term == model::Term::device || c.term == model::Term::device_traffic ||
         c.term == model::Term::device_kernels || c.term == model::Term::optimizer_device;
}

// `hw` with every host term times kh and every device term times kd.
model::HardwareModel scaled(model::HardwareModel hw, double kh, double kd) {
  for (const model::Coefficient& c : model::coefficient_table()) {
    if (!lorasim::testing::in_time(c) || c.form == model::Form::ratio) continue;
    const double k = is_host(c) ? kh : is_device(c) ? kd : 1;
    lorasim::testing::of(c, hw) = c.form == model::Form::rate ? lorasim::testing::of(c, hw) / k : lorasim::testing::of(c, hw) * k;
  }
  return hw;
}

// A user's row: the step time and the peaks, nothing finer.
calib::Measurement measure(const model::Workload& w, int64_t b, int64_t a, const model::HardwareModel& hw) {
  const model::CostModel cm(w, hw);
  calib::Measurement m;
  m.workload = w;
  m.micro_batch = b;
  m.accumulation = a;
  m.step_time_s = cm.step_time_s(b, a);
  m.peak_allocated_bytes = cm.memory(b).peak_allocated_bytes;
  m.peak_reserved_bytes = cm.memory(b).peak_reserved_bytes;
  return m;
}

const calib::GroupScale* group(const calib::FitReport& rep, const std::string& name) {
  for (const calib::GroupScale& g : rep.scales)
    if (g.group == name) return &g;
  return nullptr;
}

bool moved(const calib::FitReport& rep, const std::string& name) {
  return std::any_of(rep.moved.begin(), rep.moved.end(), [&](const auto& m) { return m.name == name; });
}

}  // namespace

TEST(AnchoredFitTest, RecoversHostAndDeviceScalesAndKeepsTheRest) {
  const model::HardwareModel base = test_gpu();
  const model::HardwareModel truth = scaled(base, 1.3, 0.9);
  std::vector<calib::Measurement> rows;
  for (int64_t b : {1, 2, 16, 32}) rows.push_back(measure(workload("qwen3-1.7b", 28, 512), b, 64 / b, truth));
  const calib::FitReport rep = calib::fit_profile(rows, base, calib::FitMode::anchored);
  ASSERT_TRUE(rep.anchored);
  ASSERT_TRUE(group(rep, "host") && group(rep, "device"));
  EXPECT_TRUE(group(rep, "host")->identified);
  EXPECT_TRUE(group(rep, "device")->identified);
  EXPECT_NEAR(group(rep, "host")->scale, 1.3, 1e-6);
  EXPECT_NEAR(group(rep, "device")->scale, 0.9, 1e-6);
  for (const model::Coefficient& c : model::coefficient_table()) {
    // The memory came from the base: its scales fit to 1, and nothing else moves.
    EXPECT_NEAR(lorasim::testing::of(c, rep.hardware), lorasim::testing::of(c, truth), 1e-6 * std::max(1.0, std::fabs(lorasim::testing::of(c, truth)))) << c.name;
    EXPECT_EQ(moved(rep, c.name), lorasim::testing::in_time(c) && lorasim::testing::of(c, base) != 0 && (is_host(c) || is_device(c)) &&
                                      c.form != model::Form::ratio)
        << c.name;
  }
  EXPECT_LT(rep.time_max_rel, 1e-9);
}

TEST(AnchoredFitTest, HostBoundRowsMoveOnlyTheHostGroup) {
  const model::HardwareModel base = test_gpu();
  const model::HardwareModel truth = scaled(base, 1.3, 0.9);
  std::vector<calib::Measurement> rows;
  for (int64_t layers : {4, 16, 28})
    for (int64_t seq : {128, 256}) rows.push_back(measure(workload("qwen3-1.7b", layers, seq), 1, 4, truth));
  for (const calib::Measurement& m : rows)
    ASSERT_TRUE(model::CostModel(m.workload, truth).step(m.micro_batch, m.accumulation).host_bound);
  const calib::FitReport rep = calib::fit_profile(rows, base, calib::FitMode::anchored);
  EXPECT_NEAR(group(rep, "host")->scale, 1.3, 1e-6);
  EXPECT_FALSE(group(rep, "device")->identified);
  EXPECT_EQ(group(rep, "device")->scale, 1.0);
  for (const model::Coefficient& c : model::coefficient_table()) {
    if (lorasim::testing::in_time(c) && !is_host(c)) {
      EXPECT_EQ(lorasim::testing::of(c, rep.hardware), lorasim::testing::of(c, base)) << c.name;
    }
  }
}

TEST(AnchoredFitTest, SeparatesMemoryTermsOnlyWhenTheRowsDo) {
  const model::HardwareModel base = test_gpu();
  model::HardwareModel truth = base;
  truth.value("saved_scale") *= 1.2;
  truth.value("logits_scale") *= 0.8;
  // One workload: the saved activations and the loss's buffers grow together, so the rows
  // identify one activation scale, not two.
  std::vector<calib::Measurement> one;
  for (int64_t b : {1, 4, 16}) one.push_back(measure(workload("qwen3-1.7b", 28, 512), b, 16 / b, truth));
  const calib::FitReport r1 = calib::fit_profile(one, base, calib::FitMode::anchored);
  ASSERT_TRUE(group(r1, "activations"));
  EXPECT_TRUE(group(r1, "activations")->identified);
  EXPECT_FALSE(group(r1, "saved"));
  EXPECT_NEAR(r1.hardware.value("saved_scale") / r1.hardware.value("logits_scale"),
              base.value("saved_scale") / base.value("logits_scale"), 1e-9);
  // Models of other depths and vocabularies separate them.
  std::vector<calib::Measurement> many = one;
  for (int64_t b : {1, 8}) {
    many.push_back(measure(workload("qwen3-1.7b", 4, 2048), b, 1, truth));
    many.push_back(measure(workload("llama-3.2-1b", 16, 1024), b, 1, truth));
  }
  const calib::FitReport r2 = calib::fit_profile(many, base, calib::FitMode::anchored);
  ASSERT_TRUE(group(r2, "saved") && group(r2, "logits"));
  EXPECT_NEAR(group(r2, "saved")->scale, 1.2, 1e-6);
  EXPECT_NEAR(group(r2, "logits")->scale, 0.8, 1e-6);
}

// The HF Trainer + PEFT runs of bench/results/h200/hf-peft-run1 (qwen3-1.7b, seq 512, B = 16):
// a full fit of them writes "no cost" rates; the anchored fit, which `lorasim fit` chooses
// for rows without a host/device split, must not.
TEST(AnchoredFitTest, ThreeRunsOfOneWorkloadNeverWriteASentinel) {
  const model::HardwareModel base = test_gpu();
  std::vector<calib::Measurement> rows;
  const struct {
    int64_t b;
    double step_s, allocated, reserved;
  } runs[] = {{1, 4.364911, 6405771776, 6612320256},
              {4, 1.143529, 16247722496, 16947085312},
              {16, 0.398433, 53557694976, 56327405568}};
  for (const auto& r : runs) {
    calib::Measurement m;
    m.workload = workload("qwen3-1.7b", 28, 512);
    m.micro_batch = r.b;
    m.accumulation = 16 / r.b;
    m.step_time_s = r.step_s;
    m.peak_allocated_bytes = r.allocated;
    m.peak_reserved_bytes = r.reserved;
    rows.push_back(m);
  }
  EXPECT_FALSE(calib::identifies_full_model(rows));
  const calib::FitReport full = calib::fit_profile(rows, base, calib::FitMode::full);
  bool full_has_sentinel = false;
  for (const model::Coefficient& c : model::coefficient_table())
    full_has_sentinel |= c.form == model::Form::rate && lorasim::testing::of(c, full.hardware) >= model::kNoCostRate;
  EXPECT_TRUE(full_has_sentinel) << "the full fit no longer degenerates: this test lost its point";

  const calib::FitReport rep = calib::fit_profile(rows, base, calib::FitMode::automatic);
  EXPECT_TRUE(rep.anchored);
  for (const model::Coefficient& c : model::coefficient_table()) {
    const double v = lorasim::testing::of(c, rep.hardware);
    EXPECT_TRUE(std::isfinite(v)) << c.name;
    if (c.form == model::Form::rate) {
      EXPECT_LT(v, model::kNoCostRate) << c.name;
    }
    if (lorasim::testing::of(c, base) != 0) {
      EXPECT_GT(v, 0) << c.name << " became 0";
    }
  }
  for (const calib::GroupScale& g : rep.scales) {
    EXPECT_GT(g.scale, 0) << g.group;
    EXPECT_FALSE(g.why.empty()) << g.group;
  }
  // Host-bound 1x16 and device-bound 16x1: both speeds are identified.
  EXPECT_TRUE(group(rep, "host")->identified);
  EXPECT_TRUE(group(rep, "device")->identified);
}

TEST(AnchoredFitTest, RunnerRowsWithAHostDeviceSplitGetTheFullFit) {
  const model::HardwareModel hw = test_gpu();
  std::vector<calib::Measurement> rows;
  for (int64_t layers : {2, 6})
    for (int64_t b : {1, 4, 16}) {
      calib::Measurement m = measure(workload("qwen3-1.7b", layers, 256), b, 1, hw);
      const model::MicroBatchTime t = model::CostModel(m.workload, hw).micro_batch(b);
      m.host_time_s = t.host_s;
      m.device_time_s = t.device_s;
      rows.push_back(m);
    }
  EXPECT_TRUE(calib::identifies_full_model(rows));
  const calib::FitReport a = calib::fit_profile(rows, hw, calib::FitMode::automatic);
  const calib::FitReport f = calib::fit_profile(rows, hw, calib::FitMode::full);
  EXPECT_FALSE(a.anchored);
  EXPECT_TRUE(a.scales.empty());
  for (const model::Coefficient& c : model::coefficient_table()) EXPECT_EQ(lorasim::testing::of(c, a.hardware), lorasim::testing::of(c, f.hardware)) << c.name;
}

TEST(AnchoredFitTest, RowsOfManyWidthsArePricedWidthByWidth) {
  // Rows of padded data: each step the optimizer plus its micro-batches at the widths they had.
  // A fit that priced the rows at their largest width (seq_len) would not recover the scales.
  const model::HardwareModel base = test_gpu();
  const model::HardwareModel truth = scaled(base, 1.3, 0.9);
  const model::PaddedWidths widths = {{128, 6}, {256, 5}, {512, 5}};
  std::vector<calib::Measurement> rows;
  for (int64_t b : {1, 2, 16, 32}) {
    model::Workload w = workload("qwen3-1.7b", 28, 512);
    calib::Measurement m = measure(w, b, 64 / b, truth);
    m.padded_lengths = widths;
    m.collation = "longest";
    double h0 = 0, d0 = 0, h1 = 0, d1 = 0;
    for (const model::PaddedWidth& pw : widths) {
      model::Workload at = w;
      at.train.seq_len = pw.width_tokens;
      const model::CostModel c(at, truth);
      const double k = static_cast<double>(pw.micro_batches) / 16;
      h0 += k * c.micro_batch(b, false).host_s;
      d0 += k * c.micro_batch(b, false).device_s;
      h1 += k * c.micro_batch(b, true).host_s;
      d1 += k * c.micro_batch(b, true).device_s;
    }
    const model::CostModel c(w, truth);
    const double rest = static_cast<double>(64 / b - 1);
    m.step_time_s = c.step_of(h0 + rest * h1 + c.optimizer().host_s, d0 + rest * d1 + c.optimizer().device_s).total_s;
    rows.push_back(m);
  }
  const calib::FitReport rep = calib::fit_profile(rows, base, calib::FitMode::anchored);
  ASSERT_TRUE(rep.anchored);
  ASSERT_TRUE(group(rep, "host") && group(rep, "device"));
  EXPECT_NEAR(group(rep, "host")->scale, 1.3, 1e-6);
  EXPECT_NEAR(group(rep, "device")->scale, 0.9, 1e-6);
}
