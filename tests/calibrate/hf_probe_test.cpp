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
