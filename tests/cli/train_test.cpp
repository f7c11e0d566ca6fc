// `lorasim train` and `lorasim calibrate` argument checks, end to end through the binary.
// They need lorasim-train (a LibTorch build) next to the binary, and skip without it.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/cli/run_lorasim.h"

namespace lorasim::testing {
namespace {

bool have_train_binary() { return fs::exists(fs::path(LORASIM_BIN).parent_path() / "lorasim-train"); }

#define REQUIRE_TRAIN_BINARY() \
  if (!have_train_binary()) GTEST_SKIP() << "built without LibTorch: no lorasim-train"

TEST(TrainCliTest, FormatCsvIsRefusedBeforeAnyTraining) {
  REQUIRE_TRAIN_BINARY();
  const std::vector<std::string> args = {"train", "--device", "cpu", "--model", "tiny", "--seq-len", "8",
                                         "--steps", "1", "--format", "csv"};
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  EXPECT_TRUE(r.out.empty()) << describe(args, r);
  EXPECT_NE(r.err.find("--format"), std::string::npos) << describe(args, r);
  EXPECT_NE(r.err.find("json"), std::string::npos) << describe(args, r);
  EXPECT_EQ(r.err.find("building"), std::string::npos) << "it trained first: " << describe(args, r);
}

TEST(TrainCliTest, FormatJsonStillPrintsJson) {
  REQUIRE_TRAIN_BINARY();
  const std::vector<std::string> args = {"train", "--device", "cpu", "--model", "tiny", "--seq-len", "8",
                                         "--steps", "1", "--warmup", "0", "--format", "json"};
  const RunResult r = run_lorasim(args);
  ASSERT_EQ(r.exit_code, 0) << describe(args, r);
  EXPECT_EQ(r.out.rfind("{", 0), 0u) << describe(args, r);
  EXPECT_NE(r.out.find("\"step_time_s\""), std::string::npos) << describe(args, r);
}

TEST(TrainCliTest, CalibrateDepthBeyondTheModelIsRefusedNamingItsLayers) {
  REQUIRE_TRAIN_BINARY();
  TempDir dir;
  const std::string out = (dir / "p.toml").string();
  const std::vector<std::string> args = {"calibrate", "--device", "cpu", "--model", "tiny",
                                         "--depths", "1,99", "--out", out};
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, 2) << describe(args, r);
  EXPECT_NE(r.err.find("99"), std::string::npos) << describe(args, r);
  EXPECT_NE(r.err.find("2 layers"), std::string::npos) << describe(args, r);
  EXPECT_FALSE(fs::exists(out));
}

TEST(TrainCliTest, AnEmptyMemoryLimitIsRefusedBeforeAnyRun) {
  // `--memory-limit ''` ran without a limit, as if the flag were absent (simulate refused it).
  REQUIRE_TRAIN_BINARY();
  TempDir dir;
  const std::string out = (dir / "p.toml").string();
  const std::vector<std::vector<std::string>> commands = {
      {"train", "--device", "cpu", "--model", "tiny", "--seq-len", "8", "--steps", "1", "--memory-limit", ""},
      {"calibrate", "--device", "cpu", "--model", "tiny", "--budget", "1", "--out", out, "--memory-limit", ""}};
  for (const auto& args : commands) {
    const RunResult r = run_lorasim(args);
    EXPECT_EQ(r.exit_code, 2) << describe(args, r);
    EXPECT_NE(r.err.find("--memory-limit"), std::string::npos) << describe(args, r);
    EXPECT_NE(r.err.find("''"), std::string::npos) << describe(args, r);
    EXPECT_EQ(r.err.find("building"), std::string::npos) << "it trained first: " << describe(args, r);
    EXPECT_EQ(r.err.find("calibrating"), std::string::npos) << "it calibrated first: " << describe(args, r);
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace lorasim::testing
