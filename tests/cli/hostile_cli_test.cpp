// Hostile command lines (issue 15): outputs that would overwrite an input or each other, limits
// and paths accepted silently, advice the command then refuses, wrong reasons for unreadable
// files, overflowing byte counts and writes to a stdout that cannot take them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const char* const kRuns =
    "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes\n"
    "qwen3-1.7b,512,1,16,false,4.36,6612320256\n"
    "qwen3-1.7b,512,4,4,false,1.14,15780000000\n"
    "qwen3-1.7b,512,16,1,false,0.398,52460000000\n";

// --- an output that is an input or another output ---------------------------------------

TEST(HostileCliTest, FitOutputThatIsTheMeasurementsFileIsRefusedAndTheFileKept) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  write_file(runs, kRuns);
  expect_error({"fit", "--measurements", runs.string(), "--gpu", "h200", "--out", runs.string()}, kUsage,
               {"--out", "--measurements", "same file"});
  EXPECT_EQ(read_file(runs), kRuns);
}

TEST(HostileCliTest, FitOutputThatIsALinkToTheMeasurementsIsRefused) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv", hard = dir / "hard.toml", soft = dir / "soft.toml";
  write_file(runs, kRuns);
  fs::create_hard_link(runs, hard);
  fs::create_symlink(runs, soft);
  for (const fs::path& out : {hard, soft}) {
    expect_error({"fit", "--measurements", runs.string(), "--gpu", "h200", "--out", out.string()}, kUsage,
                 {"--out", "--measurements", "same file"});
    EXPECT_EQ(read_file(runs), kRuns);
  }
  // Through a symbolic link to the directory, too: the paths differ, the file is one.
  fs::create_directory_symlink(dir.path(), dir / "alias");
  expect_error({"fit", "--measurements", (dir / "alias" / "runs.csv").string(), "--gpu", "h200", "--out",
                runs.string()},
               kUsage, {"same file"});
  EXPECT_EQ(read_file(runs), kRuns);
}

TEST(HostileCliTest, CalibrateProfileAndSavedMeasurementsOnOneFileAreRefusedBeforeAnyRun) {
  TempDir dir;
  const fs::path c = dir / "c.csv";
  expect_error({"calibrate", "--stack", "hf-peft", "--gpu", "h200", "--python", "/nonexistent/python", "--out",
                c.string(), "--save-measurements", c.string()},
               kUsage, {"--out", "--save-measurements", "same file"});
  EXPECT_FALSE(fs::exists(c));
}

TEST(HostileCliTest, ValidatePlotOnTheMeasurementsFileIsRefused) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv", plot = dir / "plot.svg";
  write_file(runs, kRuns);
  fs::create_hard_link(runs, plot);
  expect_error({"validate", "--measurements", runs.string(), "--gpu", "h200", "--plot", plot.string()}, kUsage,
               {"--plot", "--measurements", "same file"});
  EXPECT_EQ(read_file(runs), kRuns);
}

// --- limits and paths accepted silently --------------------------------------------------

TEST(HostileCliTest, AMemoryLimitAboveTheGpuIsRefusedUnlessAllowed) {
  expect_error({"simulate", "--gpu", "h200", "--memory-limit", "10TiB"}, kUsage,
               {"--memory-limit", "10TiB", "--allow-over-memory"});
  expect_error({"recommend", "--gpu", "h200", "--memory-limit", "10TiB"}, kUsage, {"--allow-over-memory"});
  const json j = ok_json({"simulate", "--gpu", "h200", "--memory-limit", "10TiB", "--allow-over-memory",
                          "--format", "json"});
  EXPECT_EQ(j["memory_limit_bytes"].get<int64_t>(), int64_t{10} << 40);
  // At or below the GPU's memory needs no word.
  ok({"simulate", "--gpu", "h200", "--memory-limit", "40GiB"});
}

TEST(HostileCliTest, ABareSmallMemoryLimitAsksWhetherGibibytesWereMeant) {
  expect_error({"simulate", "--gpu", "h200", "--memory-limit", "15"}, kUsage,
               {"--memory-limit", "15 bytes", "did you mean 15GiB?"});
  // A byte count spelt out is a byte count.
  ok({"simulate", "--gpu", "h200", "--memory-limit", "16000000000"});
}

TEST(HostileCliTest, AllowOverMemoryIsDocumentedInHelp) {
  const std::string help = ok({"simulate", "--help"});
  EXPECT_NE(help.find("--allow-over-memory"), std::string::npos);
}

TEST(HostileCliTest, EmptyPathsAreRefused) {
  expect_error({"simulate", "--model-config", ""}, kUsage, {"--model-config"});
  expect_error({"validate", "--gpu", "h200", "--save-measurements", "", "--model", "tiny"}, kUsage,
               {"--save-measurements"});
  expect_error({"calibrate", "--stack", "hf-peft", "--gpu", "h200", "--dry-run", "--save-measurements", ""}, kUsage,
               {"--save-measurements"});
}

TEST(HostileCliTest, GpuBesideProfileIsRefused) {
  const std::string profile = (fs::path(LORASIM_SOURCE_DIR) / "hwprofiles" / "h200.toml").string();
  expect_error({"simulate", "--gpu", "t4", "--profile", profile}, kUsage, {"--gpu", "--profile", "one or the other"});
  // --profile alone keeps working.
  ok({"simulate", "--profile", profile});
}

TEST(HostileCliTest, OutputExtensionsMustMatchWhatIsWritten) {
  TempDir dir;
  write_file(dir / "runs.csv", kRuns);
  expect_error({"fit", "--measurements", (dir / "runs.csv").string(), "--gpu", "h200", "--out",
                (dir / "x.csv").string()},
               kUsage, {"--out", ".toml"});
  EXPECT_FALSE(fs::exists(dir / "x.csv"));
  expect_error({"simulate", "--gpu", "h200", "--plot", (dir / "p.png").string()}, kUsage, {"--plot", ".svg"});
  EXPECT_FALSE(fs::exists(dir / "p.png"));
  expect_error({"calibrate", "--stack", "hf-peft", "--gpu", "h200", "--out", (dir / "c.json").string()}, kUsage,
               {"--out", ".toml"});
}

TEST(HostileCliTest, CalibrateDeepDepthAboveTheModelIsRefused) {
  if (!fs::exists(fs::path(LORASIM_BIN).parent_path() / "lorasim-train"))
    GTEST_SKIP() << "built without LibTorch: no lorasim-train";
  TempDir dir;
  const std::string out = (dir / "p.toml").string();
  const std::vector<std::string> args = {"calibrate", "--device", "cpu", "--model", "tiny", "--deep-depth", "100",
                                         "--out", out};
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, kUsage) << describe(args, r);
  EXPECT_NE(r.err.find("--deep-depth"), std::string::npos) << describe(args, r);
  EXPECT_NE(r.err.find("2 layers"), std::string::npos) << describe(args, r);
  EXPECT_EQ(r.err.find("calibrating"), std::string::npos) << "it calibrated first: " << describe(args, r);
  EXPECT_FALSE(fs::exists(out));
}

// --- advice and reasons ----------------------------------------------------------------

TEST(HostileCliTest, ValidateOfBf16RunsOnAGpuWithoutBf16GivesAdviceItAccepts) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  write_file(runs, kRuns);
  const std::vector<std::string> args = {"validate", "--gpu", "t4", "--measurements", runs.string()};
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, kUsage) << describe(args, r);
  EXPECT_NE(r.err.find("bf16"), std::string::npos) << describe(args, r);
  // validate refuses --precision beside --measurements: the advice must not send the user there.
  EXPECT_EQ(r.err.find("--precision"), std::string::npos) << describe(args, r);
  EXPECT_NE(r.err.find("precision column"), std::string::npos) << describe(args, r);
  // simulate has the flag, and names it.
  expect_error({"simulate", "--gpu", "t4", "--precision", "bf16"}, kUsage, {"--precision fp16"});
}

// Runs `shell` (a command line for /bin/sh) and returns its exit status.
int sh(const std::string& shell) {
  const int status = std::system(shell.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(HostileCliTest, AnUnreadableFileSaysPermissionDeniedNotNoSuchFile) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);  // mkdtemp's 0700 would hide every file from another user
  const fs::path runs = dir / "runs.csv", config = dir / "config.json", profile = dir / "p.toml";
  write_file(runs, kRuns);
  write_file(config, kQwen3_1_7bConfig);
  write_file(profile, builtin_h200_toml());
  for (const fs::path& p : {runs, config, profile}) ::chmod(p.c_str(), 0);
  // root reads any file: run the binary as nobody there.
  std::string prefix;
  if (::geteuid() == 0) {
    if (sh("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "root without setpriv";
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    if (sh(prefix + shell_quote(LORASIM_BIN) + " --version >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "the binary is not runnable as nobody here";
  }
  const fs::path err = dir / "err.txt";
  auto run = [&](const std::vector<std::string>& args) {
    std::string cmd = prefix + shell_quote(LORASIM_BIN);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    const int code = sh(cmd + " >/dev/null 2>" + shell_quote(err.string()));
    EXPECT_EQ(code, kConfig) << cmd << "\n" << read_file(err);
    return read_file(err);
  };
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"validate", "--gpu", "h200", "--measurements", runs.string()},
           {"simulate", "--model-config", config.string()},
           {"simulate", "--profile", profile.string()}}) {
    const std::string text = run(args);
    EXPECT_NE(text.find("Permission denied"), std::string::npos) << text;
    EXPECT_EQ(text.find("no such file"), std::string::npos) << text;
  }
}

// --- huge byte counts ------------------------------------------------------------------

TEST(HostileCliTest, AHugeContextPrintsNoOverflowedByteCount) {
  TempDir dir;
  std::string text = builtin_h200_toml();
  const size_t at = text.find("context_bytes = ");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "context_bytes = 1e30");
  write_file(dir / "big.toml", text);
  const RunResult r = run_lorasim({"simulate", "--profile", (dir / "big.toml").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.find("-9223372036854775808"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("-9223372036854775808"), std::string::npos) << r.out;
}

// --- a stdout that cannot be written ---------------------------------------------------

TEST(HostileCliTest, AFailedWriteToStdoutExitsNonZeroWithAMessage) {
  TempDir dir;
  const fs::path err = dir / "err.txt";
  for (const char* redirect : {">/dev/full", ">&-"})
    for (const char* args : {"profiles", "profiles --format json", "models --format csv",
                                    "simulate --gpu h200 --format json"}) {
      const std::string cmd = shell_quote(LORASIM_BIN) + " " + std::string(args) + " " + redirect + " 2>" + shell_quote(err.string());
      const int code = sh(cmd);
      EXPECT_NE(code, 0) << cmd;
      EXPECT_NE(read_file(err).find("error: "), std::string::npos) << cmd << "\n" << read_file(err);
      EXPECT_NE(read_file(err).find("stdout"), std::string::npos) << cmd << "\n" << read_file(err);
    }
}

}  // namespace
