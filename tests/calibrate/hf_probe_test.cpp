// Reading the probe's stream (calibrate/hf_probe.h) with a stand-in interpreter: rows, and the
// lines of runs the probe skipped (TRL's fused head without trl), which stand for their rows.
#include "calibrate/hf_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

const char* kRow =
    R"({"model": "qwen3-1.7b", "num_layers": 4, "seq_len": 512, "micro_batch": 4, "step_time_s": 0.1, "stack": "hf-peft", "allocator": "default", "loop": "probe"})";

struct Fixture {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("lorasim-hf-probe-test-" + std::to_string(::getpid()));
  Fixture() { std::filesystem::create_directories(dir); }
  ~Fixture() { std::filesystem::remove_all(dir); }

  // A "python" that ignores its arguments and prints `lines`.
  std::string python(const std::vector<std::string>& lines) {
    const std::filesystem::path p = dir / "python";
    std::ofstream f(p);
    f << "#!/bin/sh\n";
    for (const std::string& l : lines) f << "cat <<'EOF'\n" << l << "\nEOF\n";
    f.close();
    ::chmod(p.c_str(), 0755);
    return p.string();
  }
};

std::vector<HfPlannedRun> two_runs() {
  std::vector<HfPlannedRun> plan(2);
  for (HfPlannedRun& r : plan) {
    r.planned.workload.arch = model::truncated(model::preset("qwen3-1.7b"), 4);
    r.planned.workload.train.seq_len = 512;
    r.planned.workload.stack.kind = model::StackKind::hf_peft;
    r.planned.workload.stack.allocator = model::AllocatorMode::default_segments;
    r.planned.micro_batch = 4;
  }
  plan[1].planned.workload.stack.fused_lm_head = true;
  return plan;
}

}  // namespace

TEST(HfProbeTest, ASkippedRunStandsForItsRowAndIsReported) {
  Fixture fx;
  ProbeOptions opt;
  opt.work_dir = fx.dir.string();
  opt.python = fx.python({kRow, R"x({"skipped": "qwen3-1.7b L=4 s=512 b=4 a=1 fused-head", "why": "TRL's fused LM head needs trl (pip install trl)"})x"});
  std::vector<std::string> skipped;
  const std::vector<Measurement> rows = run_probe(two_runs(), opt, {}, &skipped);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].micro_batch, 4);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0], "qwen3-1.7b L=4 s=512 b=4 a=1 fused-head: TRL's fused LM head needs trl (pip install trl)");
}

TEST(HfProbeTest, FewerRowsThanPlannedWithoutSkipsIsAnError) {
  Fixture fx;
  ProbeOptions opt;
  opt.work_dir = fx.dir.string();
  opt.python = fx.python({kRow});
  try {
    run_probe(two_runs(), opt);
    FAIL() << "a missing row was accepted";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("returned 1 rows for 2 planned runs"), std::string::npos) << e.what();
  }
}

}  // namespace lorasim::calib

namespace lorasim::calib {
namespace {

// A "python" that logs each call's arguments to `log` and prints one row per probe call; a
// `-c` call (the bitsandbytes check) exits `import_status`.
std::string logging_python(const std::filesystem::path& dir, const std::filesystem::path& log, int import_status) {
  const std::filesystem::path p = dir / "python";
  std::ofstream f(p);
  f << "#!/bin/sh\necho \"$@\" >> '" << log.string() << "'\n"
    << "if [ \"$1\" = -c ]; then exit " << import_status << "; fi\n"
    << "cat <<'EOF'\n" << kRow << "\nEOF\n";
  f.close();
  ::chmod(p.c_str(), 0755);
  return p.string();
}

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

// One float run and one on an NF4 base without double quantization.
std::vector<HfPlannedRun> float_and_quantized() {
  std::vector<HfPlannedRun> plan = two_runs();
  plan[1].planned.workload.stack.fused_lm_head = false;
  model::TrainingSpec& t = plan[1].planned.workload.train;
  t.weight_format = model::WeightFormat::nf4;
  t.double_quant = false;
  t.grad_ckpt = true;
  return plan;
}

}  // namespace

TEST(HfProbeTest, AQuantizedBaseRunsInItsOwnProbeWithQuantAndDoubleQuant) {
  Fixture fx;
  ProbeOptions opt;
  opt.work_dir = fx.dir.string();
  const std::filesystem::path log = fx.dir / "calls.log";
  opt.python = logging_python(fx.dir, log, 0);
  const std::vector<Measurement> rows = run_probe(float_and_quantized(), opt);
  EXPECT_EQ(rows.size(), 2u);
  const std::vector<std::string> calls = lines_of(log);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], "-c import bitsandbytes");  // before any run
  EXPECT_EQ(calls[1], "-m lorasim_hf.probe --plan " + (fx.dir / "plan-default.json").string());
  EXPECT_EQ(calls[2], "-m lorasim_hf.probe --plan " + (fx.dir / "plan-default-quant.json").string() +
                          " --quant nf4 --double-quant false");
}

TEST(HfProbeTest, AFloatPlanNeverAsksForBitsandbytes) {
  Fixture fx;
  ProbeOptions opt;
  opt.work_dir = fx.dir.string();
  const std::filesystem::path log = fx.dir / "calls.log";
  opt.python = logging_python(fx.dir, log, 1);
  std::vector<HfPlannedRun> plan = two_runs();
  plan.resize(1);
  EXPECT_EQ(run_probe(plan, opt).size(), 1u);
  EXPECT_EQ(lines_of(log).size(), 1u);
}

TEST(HfProbeTest, WithoutBitsandbytesAQuantizedPlanStopsBeforeAnyRunSayingWhatToInstall) {
  Fixture fx;
  ProbeOptions opt;
  opt.work_dir = fx.dir.string();
  const std::filesystem::path log = fx.dir / "calls.log";
  opt.python = logging_python(fx.dir, log, 1);
  try {
    run_probe(float_and_quantized(), opt);
    FAIL() << "a quantized plan ran without bitsandbytes";
  } catch (const CalibrationError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, "--quant nf4 needs the python package bitsandbytes in '" + opt.python +
                        "': pip install bitsandbytes there (or calibrate without --quant)");
  }
  EXPECT_EQ(lines_of(log).size(), 1u);  // the check only: no probe ran
}

}  // namespace lorasim::calib
