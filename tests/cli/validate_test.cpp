// `lorasim validate`: flags that would be silently ignored or contradict each other are
// refused before anything is read or trained.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/run_lorasim.h"

namespace {

using namespace lorasim::testing;

constexpr int kUsage = 2;  // cli/args.h: bad flag or value

void expect_one_error_line(const std::vector<std::string>& args, const std::string& message) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, kUsage) << describe(args, r);
  EXPECT_EQ(r.out, "") << describe(args, r);
  const std::vector<std::string> lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << describe(args, r);
  EXPECT_EQ(lines[0], "error: " + message) << describe(args, r);
}

TEST(ValidateTest, MeasurementsRefuseTheEffectiveBatchOfLiveRuns) {
  expect_one_error_line({"validate", "--measurements", "runs.csv", "--effective-batch", "8"},
                        "--measurements compares the runs in the file; --effective-batch describes live runs: "
                        "drop it or --measurements");
}

TEST(ValidateTest, MeasurementsRefuseDeviceAndSplitsNamingEach) {
  expect_one_error_line({"validate", "--measurements", "runs.csv", "--gpu", "h200", "--device", "cpu", "--splits",
                         "1x16"},
                        "--measurements compares the runs in the file; --device, --splits describe live runs: "
                        "drop them or --measurements");
}

TEST(ValidateTest, MeasurementsRefuseAWorkloadTheRowsAlreadyCarry) {
  expect_one_error_line({"validate", "--measurements", "runs.csv", "--model", "tiny", "--grad-ckpt"},
                        "--measurements compares the runs in the file; --model, --grad-ckpt describe live runs: "
                        "drop them or --measurements");
}

TEST(ValidateTest, RepeatedSplitIsRefusedBeforeTraining) {
  expect_one_error_line({"validate", "--device", "cpu", "--model", "tiny", "--seq-len", "16", "--effective-batch",
                         "8", "--splits", "8x1,2x4,8x1"},
                        "--splits lists 8x1 twice: name each split once");
}

TEST(ValidateTest, SplitOfAnotherEffectiveBatchIsRefusedBeforeTraining) {
  expect_one_error_line({"validate", "--device", "cpu", "--model", "tiny", "--effective-batch", "8", "--splits",
                         "4x4"},
                        "--splits 4x4 gives 16 sequences per step, not the effective batch 8");
}

}  // namespace
