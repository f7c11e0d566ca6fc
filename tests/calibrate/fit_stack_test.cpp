// The hf-peft stack's fit (calibrate/fit_stack.cpp): rows made by a known model over the
// calibration plan must give that model's [stack.hf-peft] terms back, and leave the GPU's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/fit_internal.h"
#include "calibrate/hf_plan.h"
#include "hwprofiles/builtin.h"
#include "hwprofiles/profile.h"
#include "model/architecture.h"
#include "model/coefficients.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "tests/model/test_hardware.h"

namespace lorasim::calib {
namespace {

model::Workload reference(const std::string& name = "qwen3-1.7b") {
  model::Workload w;
  w.arch = model::preset(name);
  w.train.seq_len = 512;
  w.stack.kind = model::StackKind::hf_peft;  // PEFT's defaults: SDPA, no dropout, autocast
  return w;
}

model::HardwareModel h200() { return hw::builtin_profile("h200").hw; }

constexpr model::StackKind kHf = model::StackKind::hf_peft;

// Terms unlike the priors, so that a fit that returns its starting point fails.
void set_truth_terms(model::HardwareModel& hw) {
  auto t = [&](const char* name) -> double& { return hw.value(name, kHf); };
  t("host_fixed_s") = 2.5e-3;
  t("host_per_op_s") = 9.0e-5;
  t("recompute_host_share") = 1.6;
  t("device_scale") = 1.25;
  t("head_device_scale") = 1.6;
  t("optimizer_fixed_s") = 4.0e-3;
  t("optimizer_per_tensor_s") = 2.0e-5;
  t("saved_scale") = 1.04;
  t("logits_scale") = 0.93;
  t("workspace_bytes") = 3.0e8;
  t("reserved_overhead_bytes") = 6.0e8;
  t("reserved_activation_share") = 0.05;
  t("reserved_logits_share") = 0.4;
  hw.origin(kHf).calibrated = true;
}

// Every number of [stack.hf-peft].
std::vector<const model::StoredValue*> stack_values() {
  std::vector<const model::StoredValue*> v;
  for (const model::StoredValue& s : model::stored_values())
    if (std::string(s.entry().section) == "stack.hf-peft") v.push_back(&s);
  return v;
}

// A row as the probe would measure it on a device that `hw` describes exactly.
Measurement measure(const Measurement& planned, const model::HardwareModel& hw) {
  Measurement m = planned;
  const model::CostModel cm(m.workload, hw);
  const double a = static_cast<double>(m.accumulation);
  // The probe's micro-batch time is the step's mean over its micro-batches.
  m.micro_batch_time_s = (cm.micro_batch(m.micro_batch).total_s +
                          (a - 1) * cm.micro_batch(m.micro_batch, true).total_s) / a;
  m.optimizer_time_s = cm.optimizer().host_s;
  m.step_time_s = cm.step_time_s(m.micro_batch, m.accumulation);
  const model::MemoryEstimate e = cm.memory(m.micro_batch);
  m.peak_allocated_bytes = e.peak_allocated_bytes;
  m.peak_reserved_bytes = e.peak_reserved_bytes;
  m.loop = "probe";
  return m;
}

std::vector<Measurement> plan_rows(const model::HardwareModel& truth, bool is_cuda, const model::Workload& ref) {
  HfPlanOptions opt;
  opt.is_cuda = is_cuda;
  opt.reference = ref;
  std::vector<Measurement> rows;
  for (const HfPlannedRun& r : default_hf_plan(opt)) rows.push_back(measure(r.planned, truth));
  return rows;
}

void expect_near_rel(double actual, double expected, double rel, const char* name) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected)) << name;
}

void expect_gpu_half_unchanged(const FitReport& rep, const model::HardwareModel& base) {
  for (const model::Coefficient& c : model::coefficient_table()) EXPECT_EQ(lorasim::testing::of(c, rep.hardware), lorasim::testing::of(c, base)) << c.name;
  EXPECT_EQ(rep.hardware.calibrated, base.calibrated);
  for (const MovedCoefficient& m : rep.moved) EXPECT_EQ(m.name.rfind("stack.hf-peft.", 0), 0u) << m.name;
}

bool moved(const FitReport& rep, const std::string& name) {
  for (const MovedCoefficient& m : rep.moved)
    if (m.name == name) return true;
  return false;
}

}  // namespace

TEST(FitStackTest, CalibrationPlanRowsGiveTheStackTermsBack) {
  const model::HardwareModel base = h200();  // the GPU half, with the priors' stack terms
  model::HardwareModel truth = base;
  set_truth_terms(truth);
  const std::vector<Measurement> rows = plan_rows(truth, true, reference());
  const FitReport rep = fit_profile(rows, base, FitMode::automatic);
  EXPECT_FALSE(rep.anchored);
  // Exact data the model can represent: the linear solves give it back to rounding.
  for (const char* name : {"host_fixed_s", "host_per_op_s", "recompute_host_share", "device_scale",
                           "head_device_scale", "optimizer_fixed_s", "optimizer_per_tensor_s", "saved_scale",
                           "logits_scale", "workspace_bytes", "reserved_overhead_bytes",
                           "reserved_activation_share", "reserved_logits_share"}) {
    expect_near_rel(rep.hardware.value(name, kHf), truth.value(name, kHf), 1e-6, name);
    EXPECT_TRUE(moved(rep, std::string("stack.hf-peft.") + name)) << name;
  }
  EXPECT_TRUE(rep.hardware.origin(kHf).calibrated);
  expect_gpu_half_unchanged(rep, base);
  EXPECT_LT(rep.time_max_rel, 1e-6);
  EXPECT_LT(rep.reserved_max_rel, 1e-6);
}

// The spreads are priors about machines, not something one machine's rows can show.
TEST(FitStackTest, FitsKeepTheSpreads) {
  model::HardwareModel base = h200();
  base.value("host_spread", model::StackKind::hf_peft) = 0.37;
  base.value("device_spread", model::StackKind::hf_peft) = 0.13;
  model::HardwareModel truth = base;
  set_truth_terms(truth);
  const std::vector<Measurement> rows = plan_rows(truth, true, reference());
  for (FitMode mode : {FitMode::full, FitMode::anchored}) {
    const FitReport rep = fit_profile(rows, base, mode);
    EXPECT_EQ(rep.hardware.value("host_spread", model::StackKind::hf_peft), 0.37);
    EXPECT_EQ(rep.hardware.value("device_spread", model::StackKind::hf_peft), 0.13);
    EXPECT_FALSE(moved(rep, "stack.hf-peft.host_spread"));
    EXPECT_FALSE(moved(rep, "stack.hf-peft.device_spread"));
  }
}

TEST(FitStackTest, SynchronousDeviceRecoversTheRecomputeShare) {
  // The CPU's plan on a device whose host and device time add (Overlap::sum), with CPU-like
  // rates so that device time is a real part of every row: the stack's device scale applies
  // once, and the checkpointed rows' host part is what the device leaves of their time.
  model::HardwareModel base = lorasim::testing::test_gpu();
  base.overlap = model::Overlap::sum;
  base.value("gemm_tflops") = base.value("head_tflops") = 0.2;
  base.value("attention_tflops") = 0.1;
  base.value("memory_gbps") = base.value("loss_gbps") = 20;
  base.value("per_kernel_s") = 0;  // else device time is nearly proportional to the host's operators
  model::HardwareModel truth = base;
  set_truth_terms(truth);
  truth.value("head_device_scale", model::StackKind::hf_peft) = truth.value("device_scale", model::StackKind::hf_peft);  // the sum fit has one scale
  model::Workload ref = reference("tiny");
  ref.train.seq_len = 32;
  ref.train.precision = model::Precision::fp32;
  ref.stack.autocast = false;
  const FitReport rep = fit_profile(plan_rows(truth, false, ref), base, FitMode::full);
  auto got = [&](const char* name) { return rep.hardware.value(name, kHf); };
  expect_near_rel(got("host_fixed_s"), truth.value("host_fixed_s", model::StackKind::hf_peft), 1e-6, "host_fixed_s");
  expect_near_rel(got("host_per_op_s"), truth.value("host_per_op_s", model::StackKind::hf_peft), 1e-6, "host_per_op_s");
  expect_near_rel(got("device_scale"), truth.value("device_scale", model::StackKind::hf_peft), 1e-6, "device_scale");
  // One scale for blocks and head: the fitted profile must apply it to both.
  expect_near_rel(got("head_device_scale"), truth.value("head_device_scale", model::StackKind::hf_peft), 1e-6, "head_device_scale");
  expect_near_rel(got("recompute_host_share"), truth.value("recompute_host_share", model::StackKind::hf_peft), 1e-6, "recompute_host_share");
  expect_gpu_half_unchanged(rep, base);
}

TEST(FitStackTest, RowsOfBothStacksAreRefusedNamingTheStackColumn) {
  const model::HardwareModel base = h200();
  std::vector<Measurement> rows = plan_rows(base, true, reference());
  rows.resize(6);
  for (size_t i = 0; i < 3; ++i) rows[i].workload.stack = model::StackSpec::lorasim_runner();
  try {
    fit_profile(rows, base, FitMode::automatic);
    FAIL() << "fitted a mix of stacks";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("`stack` column"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 of 6"), std::string::npos) << e.what();
  }
}

// The case: three HF runs of one workload (one effective batch, three splits) and the
// builtin profile. Too few to refit: the stack's terms are scaled, never degenerate.
TEST(FitStackTest, ThreeRowsOfOneWorkloadAnchorWithoutDegenerateTerms) {
  // The user's machine differs from the profile's where machines differ: the CPU dispatches
  // 30% slower, the device runs 10% faster; the counted memory and the allocator are the same.
  const model::HardwareModel base = h200();
  model::HardwareModel truth = base;
  for (const char* host : {"host_fixed_s", "host_per_op_s", "optimizer_fixed_s", "optimizer_per_tensor_s"})
    truth.value(host, kHf) *= 1.3;
  truth.value("device_scale", kHf) *= 0.9;
  truth.value("head_device_scale", kHf) *= 0.9;
  std::vector<Measurement> rows;
  for (auto [b, a] : {std::pair<int64_t, int64_t>{1, 16}, {4, 4}, {16, 1}}) {
    Measurement m;
    m.workload = reference();
    m.micro_batch = b;
    m.accumulation = a;
    rows.push_back(measure(m, truth));
  }
  const FitReport rep = fit_profile(rows, base, FitMode::automatic);
  EXPECT_TRUE(rep.anchored);
  EXPECT_FALSE(rep.scales.empty());
  expect_gpu_half_unchanged(rep, base);
  for (const model::StoredValue* sv : stack_values()) {
    const char* name = sv->row->name;
    const double v = rep.hardware.value(name, kHf), before = base.value(name, kHf);
    EXPECT_TRUE(std::isfinite(v)) << name;
    // Nothing that had a value is zeroed, nothing becomes a "no cost" sentinel.
    if (before > 0) {
      EXPECT_GT(v, 0.0) << name;
    }
    // A byte count (worst_case_bytes is 256 MiB) is no rate, and its size says nothing of a sentinel.
    if (sv->entry().range != model::Range::bytes) {
      EXPECT_LT(v, model::kNoCostRate / 10) << name;
    }
    // A prior the measurements cannot identify (the spreads, the worst case's terms) is kept.
    if (sv->entry().fit == model::Fit::never) {
      EXPECT_EQ(v, before) << name;
    }
  }
  for (const char* scale : {"device_scale", "head_device_scale", "saved_scale", "logits_scale"}) {
    const double v = rep.hardware.value(scale, kHf);
    EXPECT_GT(v, 0.2) << scale;
    EXPECT_LT(v, 5.0) << scale;
  }
  // The three rows themselves are reproduced.
  EXPECT_LT(rep.time_max_rel, 0.05);
  EXPECT_LT(rep.reserved_max_rel, 0.05);
  // Other models and lengths of the stack (the bar: 8% mean time, 3% memory).
  double time_err = 0, worst_memory_err = 0;
  int n = 0;
  for (auto [name, seq, b, ckpt] : {std::tuple<const char*, int64_t, int64_t, bool>{"llama-3.2-1b", 1024, 8, false},
                                    {"qwen3-1.7b", 2048, 16, true},
                                    {"qwen2.5-0.5b", 4096, 4, false},
                                    {"mistral-7b", 1024, 4, false}}) {
    Measurement m;
    m.workload = reference(name);
    m.workload.train.seq_len = seq;
    m.workload.train.grad_ckpt = ckpt;
    m.micro_batch = b;
    const Measurement want = measure(m, truth);
    const model::CostModel got(m.workload, rep.hardware);
    const double te = got.step_time_s(b, 1) / want.step_time_s - 1;
    const double me = got.memory(b).peak_reserved_bytes / want.peak_reserved_bytes - 1;
    std::printf("held out %s s=%lld b=%lld%s: time %+.1f%%, reserved %+.1f%%\n", name, static_cast<long long>(seq),
                static_cast<long long>(b), ckpt ? " ckpt" : "", 100 * te, 100 * me);
    time_err += std::fabs(te);
    worst_memory_err = std::max(worst_memory_err, std::fabs(me));
    ++n;
  }
  EXPECT_LT(time_err / n, 0.08);
  EXPECT_LT(worst_memory_err, 0.03);
}

}  // namespace lorasim::calib

namespace lorasim::calib {

// The hf-peft fit's designs are the table's columns for that stack, by row: the host line, the
// optimizer's host terms, the allocated peak and the allocator's slack.
TEST(FitStackTest, StackDesignsAreTheTablesColumnsForTheStack) {
  auto names = [](const detail::Columns& cols) {
    std::vector<std::string> n;
    for (const model::Coefficient* c : cols) n.emplace_back(c->name);
    return n;
  };
  const model::StackKind hf = model::StackKind::hf_peft;
  using V = std::vector<std::string>;
  EXPECT_EQ(names(detail::columns({model::Term::host}, hf)), (V{"host_fixed_s", "host_per_op_s"}));
  EXPECT_EQ(names(detail::columns({model::Term::optimizer_host}, hf)), (V{"optimizer_fixed_s", "optimizer_per_tensor_s"}));
  EXPECT_EQ(names(detail::columns({model::Term::allocated}, hf)), (V{"saved_scale", "logits_scale", "workspace_bytes"}));
  EXPECT_EQ(names(detail::columns({model::Term::reserved, model::Term::reserved_slack}, hf)),
            (V{"reserved_overhead_bytes", "reserved_activation_share", "reserved_logits_share"}));
  // The device's rows are the runner's to fit: no hf-peft design has them.
  EXPECT_TRUE(detail::columns({model::Term::device, model::Term::device_traffic, model::Term::device_kernels,
                               model::Term::optimizer_device},
                              hf)
                  .empty());
}


// Lightning runs hf-peft's model code under its own loop: its rows fit the loop's host terms and
// device scales ([stack.lightning]) and leave hf-peft's, which it reads for everything else.
TEST(FitStackTest, LightningRowsFitOnlyTheLoopsTerms) {
  const model::StackKind pl = model::parse_stack("lightning");
  model::HardwareModel base = h200();
  set_truth_terms(base);  // a calibrated hf-peft half the lightning fit must keep
  model::HardwareModel truth = base;
  truth.origin(pl).has_values = true;
  const std::pair<const char*, double> loop[] = {
      {"host_fixed_s", 3.0e-3}, {"host_per_op_s", 1.2e-5}, {"optimizer_fixed_s", 2.0e-3}, {"optimizer_per_tensor_s", 3.0e-5},
      {"device_scale", 0.95}, {"head_device_scale", 0.75}};
  for (const auto& [name, v] : loop) truth.value(name, pl) = v;
  HfPlanOptions opt;
  opt.reference = reference();
  opt.is_cuda = true;  // the GPU plan: its full-depth device-bound run identifies the device scales
  opt.reference.stack.kind = pl;
  std::vector<Measurement> rows;
  for (const HfPlannedRun& r : default_loop_plan(opt)) rows.push_back(measure(r.planned, truth));
  const FitReport rep = fit_profile(rows, base, FitMode::automatic);
  EXPECT_EQ(rep.stack, pl);
  EXPECT_FALSE(rep.anchored);
  for (const auto& [name, v] : loop) {
    // The device scales come from the device-bound micro-batches alone, whose truth is a whole
    // step's max(host, device): within a few tenths of a percent.
    const bool device = std::string(name).find("device_scale") != std::string::npos;
    expect_near_rel(rep.hardware.value(name, pl), v, device ? 3e-3 : 1e-6, name);
    EXPECT_TRUE(moved(rep, std::string("stack.lightning.") + name)) << name;
  }
  for (const MovedCoefficient& m : rep.moved) EXPECT_EQ(m.name.rfind("stack.lightning.", 0), 0u) << m.name;
  EXPECT_EQ(rep.hardware.values, [&] {
    model::HardwareModel want = base;  // every other stored value as the base had it
    for (const auto& [name, v] : loop) want.value(name, pl) = rep.hardware.value(name, pl);
    return want.values;
  }());
  EXPECT_TRUE(rep.hardware.origin(pl).calibrated);
  EXPECT_LT(rep.time_max_rel, 3e-3);
}

// Where no micro-batch at the plan's full depth keeps the device busy (a slow host), the loop's
// device scales stay hf-peft's: a few layers alone do not identify them.
TEST(FitStackTest, LightningKeepsHfPeftsDeviceScalesWithoutADeviceBoundFullDepthRun) {
  const model::StackKind pl = model::parse_stack("lightning");
  model::HardwareModel base = h200();
  set_truth_terms(base);
  model::HardwareModel truth = base;
  truth.origin(pl).has_values = true;
  truth.value("host_per_op_s", pl) = 7.0e-5;  // every full-depth run host-bound
  truth.value("device_scale", pl) = 0.95;
  truth.value("head_device_scale", pl) = 0.75;
  HfPlanOptions opt;
  opt.reference = reference();
  opt.reference.stack.kind = pl;
  opt.is_cuda = true;
  std::vector<Measurement> rows;
  for (const HfPlannedRun& r : default_loop_plan(opt)) rows.push_back(measure(r.planned, truth));
  const FitReport rep = fit_profile(rows, base, FitMode::automatic);
  EXPECT_EQ(rep.hardware.value("device_scale", pl), base.value("device_scale", model::StackKind::hf_peft));
  EXPECT_EQ(rep.hardware.value("head_device_scale", pl), base.value("head_device_scale", model::StackKind::hf_peft));
  expect_near_rel(rep.hardware.value("host_per_op_s", pl), 7.0e-5, 0.05, "host_per_op_s");
}

}  // namespace lorasim::calib
