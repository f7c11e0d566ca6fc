// End-to-end test of the real CPU pipeline through the `lorasim` binary: calibrate a profile
// with LibTorch on this machine, simulate with it, validate it against freshly measured runs,
// refit it from the saved measurements, and the failure paths of the training commands
// (an interrupt, an unwritable output, CUDA asked for and absent). Built only when lorasim has
// LibTorch. The calibration (~15 s on two cores) runs once per process in SetUpTestSuite,
// so ctest runs this binary whole rather than one process per test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/run_lorasim.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace lorasim::testing;

constexpr int kUsage = 2;        // cli/args.h: bad flag or value
constexpr int kCalibration = 4;  // cli/args.h: training or calibration failed

/// A directory that outlives one test (the suite's shared calibration), removed by hand.
fs::path make_temp_dir() {
  std::string tmpl = (fs::path(::testing::TempDir()) / "lorasim-pipeline-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
  return tmpl;
}

/// Runs a command that must succeed and parses its stdout as JSON (progress may go to stderr).
json ok_json(const std::vector<std::string>& args) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, 0) << describe(args, r);
  try {
    return json::parse(r.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << ")\n" << describe(args, r);
    return json();
  }
}

/// The error contract of cli/main.cpp: exit `code`, one line "error: ..." containing `needle`.
void expect_one_error_line(const std::vector<std::string>& args, const RunResult& r, int code,
                           const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << describe(args, r);
  const std::vector<std::string> lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << describe(args, r);
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << describe(args, r);
  EXPECT_NE(lines[0].find(needle), std::string::npos) << "wants '" << needle << "'\n" << describe(args, r);
}

std::vector<std::string> calibrate_args(const fs::path& dir) {
  return {"calibrate", "--device", "cpu", "--model", "tiny", "--out", (dir / "cpu.toml").string(),
          "--save-measurements", (dir / "runs.csv").string(), "--budget", "60"};
}

// ---------------------------------------------------------------------------------------------

/// One CPU calibration shared by every test of the suite.
class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir());
    const auto start = Clock::now();
    calibrate_ = new RunResult(run_lorasim(calibrate_args(*dir_)));
    calibrate_s_ = std::chrono::duration<double>(Clock::now() - start).count();
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
    delete calibrate_;
  }
  void SetUp() override {
    ASSERT_EQ(calibrate_->exit_code, 0) << "the shared calibration failed\n"
                                        << describe(calibrate_args(*dir_), *calibrate_);
  }

  static fs::path profile() { return *dir_ / "cpu.toml"; }
  static fs::path runs() { return *dir_ / "runs.csv"; }

  static fs::path* dir_;
  static RunResult* calibrate_;
  static double calibrate_s_;
};

fs::path* PipelineTest::dir_ = nullptr;
RunResult* PipelineTest::calibrate_ = nullptr;
double PipelineTest::calibrate_s_ = 0;

TEST_F(PipelineTest, CalibrateWritesAProfileThatSimulateUsesAsCalibrated) {
  RecordProperty("calibrate_s", std::to_string(calibrate_s_));
  EXPECT_NE(calibrate_->out.find("wrote " + profile().string()), std::string::npos) << calibrate_->out;
  ASSERT_TRUE(fs::is_regular_file(profile()));
  ASSERT_TRUE(fs::is_regular_file(runs()));
  // Only the two outputs: the atomic write leaves no temporary behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(*dir_), fs::directory_iterator()), 2);

  const json j = ok_json({"simulate", "--profile", profile().string(), "--model", "tiny", "--effective-batch", "8",
                          "--seq-len", "64", "--precision", "fp32", "--format", "json"});
  EXPECT_EQ(j["gpu"]["calibrated"], true) << j["gpu"].dump();
  ASSERT_TRUE(j["splits"].is_array());
  EXPECT_EQ(j["splits"].size(), 4u);  // 1x8, 2x4, 4x2, 8x1
  for (const auto& s : j["splits"]) {
    EXPECT_GT(s["step_time_s"].get<double>(), 0) << s.dump();
    EXPECT_GT(s["peak_reserved_bytes"].get<double>(), 0) << s.dump();
  }
}

TEST_F(PipelineTest, ValidatePredictsPeakMemoryWithinFivePercentOfMeasured) {
  const json j = ok_json({"validate", "--profile", profile().string(), "--device", "cpu", "--model", "tiny",
                          "--effective-batch", "8", "--seq-len", "64", "--format", "json"});
  ASSERT_TRUE(j["splits"].is_array()) << j.dump().substr(0, 2000);
  ASSERT_EQ(j["splits"].size(), 4u);
  // The predictions are the simulator's for the same workload (the runner's stack), figure for figure.
  const json sim = ok_json({"simulate", "--profile", profile().string(), "--model", "tiny", "--effective-batch", "8",
                            "--seq-len", "64", "--precision", "fp32", "--stack", "lorasim", "--format", "json"});
  ASSERT_EQ(sim["splits"].size(), 4u) << sim.dump().substr(0, 2000);
  int measured = 0, hits = 0;
  for (size_t i = 0; i < j["splits"].size(); ++i) {
    const json& s = j["splits"][i];
    SCOPED_TRACE(s.dump());
    const json& p = sim["splits"][i];
    EXPECT_EQ(s["micro_batch"], p["micro_batch"]);
    EXPECT_EQ(s["predicted_step_time_s"].get<double>(), p["step_time_s"].get<double>());
    EXPECT_EQ(static_cast<int64_t>(s["predicted_peak_reserved_bytes"].get<double>()), p["peak_reserved_bytes"]);
    EXPECT_EQ(s["predicted_fits"], p["fits"]);
    EXPECT_EQ(s["predicted_step_time_low_s"].get<double>(), p["step_time_low_s"].get<double>());
    EXPECT_EQ(s["predicted_step_time_high_s"].get<double>(), p["step_time_high_s"].get<double>());
    // The worst case that decides fits is reported, and bounds the unbiased peak.
    ASSERT_TRUE(s.contains("predicted_worst_reserved_bytes"));
    EXPECT_EQ(static_cast<int64_t>(s["predicted_worst_reserved_bytes"].get<double>()), p["worst_reserved_bytes"]);
    EXPECT_GE(s["predicted_worst_reserved_bytes"].get<double>(), s["predicted_peak_reserved_bytes"].get<double>());
    if (s["measured_oom"].get<bool>()) continue;
    ++measured;
    ASSERT_TRUE(s["reserved_error"].is_number());
    EXPECT_LT(std::abs(s["reserved_error"].get<double>()), 0.05);
    ASSERT_TRUE(s["step_time_error"].is_number());
    EXPECT_TRUE(std::isfinite(s["step_time_error"].get<double>()));
    EXPECT_GT(s["measured_step_time_s"].get<double>(), 0);
    const double meas = s["measured_step_time_s"];
    EXPECT_EQ(s["within_range"].get<bool>(), meas >= s["predicted_step_time_low_s"].get<double>() &&
                                                 meas <= s["predicted_step_time_high_s"].get<double>());
    hits += s["within_range"].get<bool>();
  }
  EXPECT_GT(measured, 0) << "every split ran out of memory on the CPU";
  EXPECT_DOUBLE_EQ(j["summary"]["time_range_coverage"].get<double>(), static_cast<double>(hits) / measured);
  EXPECT_EQ(j["summary"]["points"], measured) << j["summary"].dump();
  // The worst case is never below the unbiased peak, so it under-predicts no more than it.
  ASSERT_TRUE(j["summary"].contains("reserved_max_under_err_worst_case")) << j["summary"].dump();
  EXPECT_LE(j["summary"]["reserved_max_under_err_worst_case"].get<double>(),
            j["summary"]["reserved_max_under_err"].get<double>());
}

/// The value of `key = ...` in a TOML file written by lorasim (one key per line).
double toml_number(const fs::path& file, const std::string& key) {
  for (const std::string& line : lines_of(read_file(file)))
    if (line.rfind(key + " = ", 0) == 0) return std::stod(line.substr(key.size() + 3));
  ADD_FAILURE() << key << " not in " << file;
  return std::nan("");
}

TEST_F(PipelineTest, FitOfTheSavedMeasurementsValidatesAgainstThem) {
  const fs::path refit = *dir_ / "refit.toml";
  const std::vector<std::string> fit = {"fit", "--measurements", runs().string(), "--out", refit.string(),
                                        "--profile", profile().string(), "--overlap", "sum"};
  const RunResult r = run_lorasim(fit);
  ASSERT_EQ(r.exit_code, 0) << describe(fit, r);
  ASSERT_TRUE(fs::is_regular_file(refit));

  const json j = ok_json({"validate", "--measurements", runs().string(), "--profile", refit.string(), "--format", "json"});
  ASSERT_TRUE(j.contains("summary")) << j.dump().substr(0, 2000);
  const json& sum = j["summary"];
  EXPECT_GT(sum["points"].get<int>(), 0) << sum.dump();
  // Validation of the rows the profile was fitted on reproduces the fit's own residuals: the
  // fit and the simulator evaluate one cost model.
  const double rms = toml_number(refit, "time_rms_rel"), max = toml_number(refit, "time_max_rel");
  EXPECT_NEAR(sum["time_max_abs_err"].get<double>(), max, 1e-9 + 1e-6 * max) << sum.dump();
  EXPECT_LE(sum["time_mean_abs_err"].get<double>(), rms + 1e-9) << sum.dump();
  EXPECT_NEAR(toml_number(refit, "expected_time_error"), std::max(0.05, 2 * rms), 1e-9);
  EXPECT_LE(sum["mem_mean_abs_err"].get<double>(), toml_number(refit, "reserved_rms_rel") + 1e-9) << sum.dump();
  EXPECT_LE(sum["mem_max_under_err_worst_case"].get<double>(), sum["mem_max_under_err"].get<double>()) << sum.dump();
  for (const auto& g : j["groups"])
    for (const auto& s : g["splits"])
      EXPECT_GE(s["predicted_worst_reserved_bytes"].get<double>(), s["predicted_peak_reserved_bytes"].get<double>())
          << s.dump();
}

// ---------------------------------------------------------------------------------------------

/// Starts the binary with stdout and stderr going to files; returns the child's pid.
pid_t spawn_lorasim(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  std::vector<std::string> argv_s = {LORASIM_BIN};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  EXPECT_EQ(rc, 0) << "posix_spawn " << LORASIM_BIN;
  return rc == 0 ? pid : -1;
}

TEST(PipelineErrorTest, InterruptedCalibrateFailsAndLeavesNoFiles) {
  TempDir dir, logs;  // logs apart, so `dir` must end up empty
  const fs::path out = logs / "stdout.txt", err = logs / "stderr.txt";
  const std::vector<std::string> args = calibrate_args(dir.path());
  const pid_t pid = spawn_lorasim(args, out, err);
  ASSERT_GT(pid, 0);

  // Interrupt once the first run is reported (the handler is installed by then), or after
  // 30 s in any case, so a slow start cannot hang the test.
  const auto start = Clock::now();
  while (read_file(err).find("[ 1/") == std::string::npos && Clock::now() - start < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const auto interrupted = Clock::now();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const double stop_s = std::chrono::duration<double>(Clock::now() - interrupted).count();
  RecordProperty("stop_after_interrupt_s", std::to_string(stop_s));

  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " instead of exiting\n" << describe(args, r);
  EXPECT_EQ(r.exit_code, kCalibration) << describe(args, r);
  EXPECT_NE(r.err.find("error: calibration interrupted"), std::string::npos) << describe(args, r);
  // Runs are short; the interrupt is polled between them.
  EXPECT_LT(stop_s, 15) << describe(args, r);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left.front()) << " (and " << left.size()
                            << " in all)";
}

TEST(PipelineErrorTest, CalibrateToAMissingDirectoryFailsBeforeTraining) {
  const std::vector<std::string> args = {"calibrate", "--device", "cpu", "--model", "tiny",
                                         "--out", "/nonexistent-dir/x.toml"};
  // Training commands run in lorasim-train, and loading LibTorch alone takes most of a second
  // (its static initializers), so "at once" is measured against `calibrate --help`, which
  // starts the same binary and does nothing else.
  auto seconds_of = [](const std::vector<std::string>& a, RunResult* r) {
    const auto start = Clock::now();
    *r = run_lorasim(a);
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  RunResult version, r;
  const double startup_s = seconds_of({"calibrate", "--help"}, &version);
  const double took_s = seconds_of(args, &r);
  RecordProperty("startup_s", std::to_string(startup_s));
  RecordProperty("failed_after_s", std::to_string(took_s));
  expect_one_error_line(args, r, kUsage, "/nonexistent-dir");
  EXPECT_EQ(r.out, "") << describe(args, r);
  EXPECT_LT(took_s, startup_s + 0.5) << "should fail before building any model (startup alone: " << startup_s
                                     << " s)\n" << describe(args, r);
}

TEST(PipelineErrorTest, UnknownWideModelIsRefusedBeforeTrainingAndWritesNothing) {
  TempDir dir;
  const std::string out = (dir.path() / "x.toml").string();
  const std::vector<std::string> args = {"calibrate", "--device", "cpu", "--model", "tiny",
                                         "--wide-model", "qwen3-9b", "--out", out};
  const RunResult r = run_lorasim(args);
  expect_one_error_line(args, r, kUsage, "--wide-model: unknown model 'qwen3-9b'");
  EXPECT_EQ(r.out, "") << describe(args, r);
  EXPECT_FALSE(fs::exists(out));
}

TEST(PipelineErrorTest, TrainOnCudaWithoutCudaIsOneClearError) {
  // Tiny and short, so that a machine that does have CUDA skips quickly.
  const std::vector<std::string> args = {"train", "--device", "cuda", "--model", "tiny", "--seq-len", "16",
                                         "--steps", "1", "--warmup", "0"};
  const RunResult r = run_lorasim(args);
  if (r.exit_code == 0) GTEST_SKIP() << "CUDA is available here";
  expect_one_error_line(args, r, kUsage, "cuda");
  EXPECT_EQ(r.out, "") << describe(args, r);
}

TEST(PipelineErrorTest, VersionNamesLibTorchAndCuda) {
  const RunResult r = run_lorasim({"--version"});
  EXPECT_EQ(r.exit_code, 0) << describe({"--version"}, r);
  EXPECT_NE(r.out.find("LibTorch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CUDA"), std::string::npos) << r.out;
}

}  // namespace
