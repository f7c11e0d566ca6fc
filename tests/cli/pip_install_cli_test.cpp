// What `pip install .` gives: `lorasim` alone, without lorasim-train (LibTorch). Each command and
// message must name only what runs there: calibrate runs the hf-peft stack, and a profile
// calibrated on the CPU describes the CPU (cli/forward.h, cli/cmd_calibrate_hf.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

// The built binary copied alone into a directory, as the wheel installs it.
class PipInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = dir_ / "lorasim";
    fs::copy_file(LORASIM_BIN, bin_);
  }
  RunResult run(const std::vector<std::string>& args) const { return run_binary(bin_, args); }
  TempDir dir_;
  fs::path bin_;
};

TEST_F(PipInstallTest, VersionSaysCalibrateRunsTheHfStack) {
  const RunResult r = run({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("calibrate runs the hf-peft stack"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("calibrate, train"), std::string::npos) << r.out;
}

TEST_F(PipInstallTest, CalibrateHelpIsTheHfStacksAndSaysWhy) {
  const RunResult r = run({"calibrate", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("usage: lorasim calibrate --stack hf-peft"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("note: this lorasim has no lorasim-train"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
}

TEST_F(PipInstallTest, CalibrateOnTheCpuPlansTheCpusOwnProfile) {
  const RunResult r = run({"calibrate", "--device", "cpu", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("runs of the hf-peft stack on cpu"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("NVIDIA"), std::string::npos) << r.out;
}

TEST_F(PipInstallTest, TheLibTorchRunnerNamesWhatRunsInstead) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"calibrate", "--stack", "lorasim", "--out", (dir_ / "p.toml").string()}, "--stack hf-peft"},
      {{"train", "--model", "tiny"}, "LorasimCallback"},
      {{"validate", "--model", "tiny"}, "--measurements FILE"},
      {{"calibrate", "--interconnect", "--device", "cpu", "--out", (dir_ / "p.toml").string()},
       "lorasim_hf.probe_allreduce"}};
  for (const auto& [args, instead] : cases) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, kUsage) << describe(args, r);
    const std::vector<std::string> lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 1u) << describe(args, r);
    EXPECT_NE(lines[0].find(instead), std::string::npos) << describe(args, r);
    EXPECT_NE(lines[0].find("LORASIM_WITH_TORCH=ON"), std::string::npos) << describe(args, r);
  }
}

TEST(CalibrateHfCpuTest, AGpuProfileForTheCpuIsRefused) {
  expect_error({"calibrate", "--stack", "hf-peft", "--device", "cpu", "--gpu", "h200", "--dry-run"}, kUsage,
               {"--device cpu trains on the CPU", "--gpu h200 describes the NVIDIA H200", "leave --gpu/--profile out"});
}

TEST(CalibrateHfCpuTest, CudaStillNeedsTheGpusProfile) {
  expect_error({"calibrate", "--stack", "hf-peft", "--dry-run"}, kUsage, {"--gpu NAME or --profile FILE is required on CUDA"});
}

}  // namespace
