// End-to-end: the runner data-parallel (`train --processes`) and the interconnect calibration
// (`calibrate --interconnect`) on two Gloo processes of the CPU (docs/data-parallel.md), and
// their refusals. The training ones need lorasim-train (a LibTorch build) and skip without it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

bool have_train_binary() { return fs::exists(fs::path(LORASIM_BIN).parent_path() / "lorasim-train"); }

#define REQUIRE_TRAIN_BINARY() \
  if (!have_train_binary()) GTEST_SKIP() << "built without LibTorch: no lorasim-train"

const std::vector<std::string> kTrain = {"train", "--device", "cpu", "--model", "tiny", "--seq-len", "16",
                                         "--steps", "1", "--warmup", "0", "--format", "json"};

json train_json(const std::vector<std::string>& args) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, 0) << describe(args, r);
  try {
    return json::parse(r.out);
  } catch (const json::exception&) {
    ADD_FAILURE() << describe(args, r);
    return json();
  }
}

TEST(DataParallelTrainTest, TwoProcessesLoseWhatOneProcessOfTheWholeBatchLoses) {
  REQUIRE_TRAIN_BINARY();
  TempDir dir;
  const std::string rows = (dir / "rows.csv").string();
  const json two = train_json(with(kTrain, {"--micro-batch", "2", "--accum", "2", "--processes", "2",
                                            "--save-measurements", rows}));
  const json one = train_json(with(kTrain, {"--micro-batch", "4", "--accum", "2"}));
  EXPECT_EQ(two["processes"], 2);
  EXPECT_EQ(two["backend"], "gloo");
  EXPECT_FALSE(one.contains("processes"));
  const double a = two["losses"][0], b = one["losses"][0];
  EXPECT_NEAR(a, b, 1e-6 * std::abs(b));
  // One row, rank 0's, saying 2 processes of 2 x 2.
  const std::vector<std::string> lines = lines_of(read_file(rows));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("processes"), std::string::npos);
  const json v = ok_json({"validate", "--measurements", rows, "--gpu", "h200", "--allow-device-mismatch",
                          "--format", "json"});
  EXPECT_NE(v["groups"][0]["workload"].get<std::string>().find("gpus=2"), std::string::npos) << v.dump();
}

TEST(DataParallelTrainTest, TwoGlooProcessesCalibrateAGlooCpuInterconnectThatSimulateReads) {
  REQUIRE_TRAIN_BINARY();
  TempDir dir;
  const std::string out = (dir / "cpu.toml").string(), rows = (dir / "ar.csv").string();
  const std::vector<std::string> args = {"calibrate", "--interconnect", "--device", "cpu", "--processes", "2",
                                         "--max-bytes", "16MiB", "--repeats", "3", "--out", out,
                                         "--save-measurements", rows};
  const RunResult r = run_lorasim(args);
  ASSERT_EQ(r.exit_code, 0) << describe(args, r);
  EXPECT_NE(r.out.find("interconnect: gloo-cpu"), std::string::npos) << describe(args, r);
  const std::string text = read_file(out);
  EXPECT_NE(text.find("link = \"gloo-cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("calibrated = true"), std::string::npos) << text;
  // The header and 1 KiB .. 16 MiB by x4. On a busy CPU, messages of 1 MiB or less can take as long
  // as their latency alone: 16 MiB is what makes the bandwidth show.
  EXPECT_EQ(lines_of(read_file(rows)).size(), 9u);
  const json j = ok_json({"simulate", "--profile", out, "--model", "tiny", "--seq-len", "32", "--effective-batch", "4",
                          "--gpus", "2", "--format", "json"});
  EXPECT_EQ(j["data_parallel"]["link"], "gloo-cpu");
  EXPECT_GT(j["data_parallel"]["allreduce_gbps"].get<double>(), 0);
  // Refitting the saved rows gives the same table; into a GPU's profile they are refused.
  const std::string refit = (dir / "refit.toml").string();
  const RunResult f = run_lorasim({"calibrate", "--interconnect", "--measurements", rows, "--profile", out, "--out", refit});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  expect_error({"calibrate", "--interconnect", "--measurements", rows, "--gpu", "h200", "--out", refit}, kUsage,
               {"Gloo on the CPU", "CPU profile"});
}

TEST(DataParallelTrainTest, RankFlagsWithProcessesAndLengthsAreRefusedBeforeTraining) {
  REQUIRE_TRAIN_BINARY();
  expect_error(with(kTrain, {"--processes", "2", "--rank", "1"}), kUsage, {"--processes", "--rank"});
  expect_error(with(kTrain, {"--world-size", "2"}), kUsage, {"--rendezvous"});
  expect_error(with(kTrain, {"--rank", "0", "--world-size", "2", "--rendezvous", "/nonexistent-lorasim/store"}), kUsage,
               {"--rendezvous", "does not exist"});
  TempDir dir;
  write_file(dir / "l.csv", "length\n8\n12\n");
  expect_error({"train", "--device", "cpu", "--model", "tiny", "--steps", "1", "--processes", "2", "--lengths",
                (dir / "l.csv").string()},
               kUsage, {"fixed lengths"});
}

TEST(DataParallelTrainTest, InterconnectRowsNeedAProfileAndRefuseANonGpuLink) {
  TempDir dir;
  const std::string rows = (dir / "r.csv").string(), out = (dir / "p.toml").string();
  write_file(rows, "backend,device,processes,bytes,time_s\nnccl,NVIDIA H200,2,1024,2e-05\nnccl,NVIDIA H200,2,67108864,0.0005\n");
  expect_error({"calibrate", "--interconnect", "--measurements", rows, "--out", out}, kUsage, {"--gpu NAME or --profile"});
  expect_error({"calibrate", "--interconnect", "--measurements", rows, "--gpu", "h200", "--link", "gloo-cpu", "--out", out},
               kUsage, {"--link", "a GPU"});
  const RunResult r = run_lorasim({"calibrate", "--interconnect", "--measurements", rows, "--gpu", "h200", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_file(out);
  EXPECT_NE(text.find("link = \"nvlink\""), std::string::npos) << text;  // the H200's own kind
  expect_error({"simulate", "--gpu", "h200", "--model", "tiny", "--effective-batch", "4", "--gpus", "2", "--link",
                "gloo-cpu"},
               kUsage, {"--link", "no GPU link"});
}

}  // namespace
