// End-to-end tests of `lorasim simulate` and `recommend` on hostile input: numbers whose counts
// do not fit in 64 bits, values that were silently ignored, and messages that pointed the wrong
// way. Each must be one "error: ..." line saying what to do, a non-zero exit, and no result.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::vector<std::string> kFormats = {"table", "csv", "json"};

TEST(SimulateInputTest, TokensPerStepBeyondInt64AreOneErrorInEveryFormat) {
  // Printed "-16 tokens" and -9223372036854775808 bytes with exit 0.
  for (const char* command : {"simulate", "recommend"})
    for (const std::string& format : kFormats) {
      SCOPED_TRACE(std::string(command) + " " + format);
      expect_error({command, "--seq-len", "9223372036854775807", "--format", format}, kUsage,
                   {"sequence length 9223372036854775807", "does not fit", "shorter sequence length"});
    }
}

TEST(SimulateInputTest, MemoryBeyondInt64BytesIsOneError) {
  // 2^40 sequences of 2048 tokens: the token count fits, the largest micro-batch's bytes do not.
  expect_error({"simulate", "--effective-batch", "1099511627776", "--seq-len", "2048", "--format", "json"}, kUsage,
               {"8 EiB", "smaller effective batch"});
}

TEST(SimulateInputTest, HugeEffectiveBatchIsRefusedAtOnce) {
  // Took 40 s enumerating splits, then printed "-512 tokens".
  const auto start = std::chrono::steady_clock::now();
  expect_error({"simulate", "--effective-batch", "9223372036854775807"}, kUsage,
               {"effective batch 9223372036854775807", "at most 1099511627776"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The bound itself is simulated, exactly: 41 splits, every byte count positive.
  const json j = ok_json({"simulate", "--model", "tiny", "--seq-len", "1", "--effective-batch", "1099511627776",
                          "--format", "json"});
  ASSERT_EQ(j["splits"].size(), 41u);
  for (const auto& s : j["splits"]) EXPECT_GT(s["worst_reserved_bytes"].get<int64_t>(), 0);
}

TEST(SimulateInputTest, ConfigJsonWhoseCountsDoNotFitIsAConfigError) {
  TempDir dir;
  const fs::path file = dir / "config.json";
  // Printed "-2062744066729963520 frozen" and went on to simulate.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"vocab_size\": 151936", "\"vocab_size\": 2000000000000000"},
           {"\"num_hidden_layers\": 28", "\"num_hidden_layers\": 4611686018427387904"}}) {
    SCOPED_TRACE(to);
    write_file(file, replace_once(kQwen3_1_7bConfig, from, to));
    expect_error({"simulate", "--model-config", file.string(), "--format", "json"}, kConfig,
                 {file.string(), "too large"});
  }
}

TEST(SimulateInputTest, AStrayWordIsRefusedWithTheFlagItBelongsTo) {
  // `simulate qwen3-8b` simulated the default qwen3-1.7b.
  expect_error({"simulate", "qwen3-8b"}, kUsage, {"unexpected argument 'qwen3-8b'", "--model qwen3-8b"});
  expect_error({"recommend", "--effective-batch", "8", "h200"}, kUsage, {"'h200'", "--gpu h200"});
  expect_error({"simulate", "8"}, kUsage, {"unexpected argument '8'"});
  expect_error({"models", "qwen3-8b"}, kUsage, {"unexpected argument 'qwen3-8b'"});
}

TEST(SimulateInputTest, EmptyProfileGpuAndMemoryLimitAreRefused) {
  // An empty --profile or --memory-limit read as "not given"; an empty --gpu suggested t4.
  expect_error({"simulate", "--profile", ""}, kUsage, {"--profile is empty", "--gpu"});
  expect_error({"simulate", "--memory-limit", ""}, kUsage, {"--memory-limit", "''"});
  expect_error({"recommend", "--gpu", ""}, kUsage, {"--gpu is empty", "t4", "h200", "lorasim profiles"});
  const RunResult r = run_lorasim({"simulate", "--gpu", ""});
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST(SimulateInputTest, AMemoryLimitBelowTheCudaContextIsRefused) {
  // Printed "-25.60 MiB usable" and a table of splits that do not fit.
  for (const char* command : {"simulate", "recommend"}) {
    SCOPED_TRACE(command);
    expect_error({command, "--gpu", "h200", "--memory-limit", "512MiB"}, kUsage,
                 {"memory limit of 512 MiB", "512 MiB CUDA context", "raise the memory limit"});
  }
}

TEST(SimulateInputTest, AnEmbeddedNameGivenToProfilePointsAtGpu) {
  // "cannot read profile 'h200' ... pass a profile file, or a built-in name" refused the name it offered.
  expect_error({"simulate", "--profile", "h200"}, kUsage, {"--profile 'h200'", "no such file", "use --gpu h200"});
  TempDir dir;
  const std::string absent = (dir / "absent.toml").string();
  expect_error({"simulate", "--profile", absent}, kConfig, {absent, "no such file", "--gpu"});
}

TEST(SimulateInputTest, ADirectoryAsConfigJsonIsNamedAsOne) {
  // Was "malformed JSON" at line 1.
  TempDir dir;
  expect_error({"simulate", "--model-config", dir.path().string()}, kConfig, {"is a directory"});
  write_file(dir / "config.json", kQwen3_1_7bConfig);
  expect_error({"simulate", "--model-config", dir.path().string()}, kConfig,
               {"is a directory", "pass " + (dir / "config.json").string()});
}

TEST(SimulateInputTest, MemoryLimitsInTebibytesAreAccepted) {
  // The header prints TiB; the flag refused it. (Above the GPU's memory, so it takes the override.)
  const json j = ok_json({"simulate", "--memory-limit", "10TiB", "--allow-over-memory", "--format", "json"});
  EXPECT_EQ(j["memory_limit_bytes"].get<int64_t>(), int64_t{10} << 40);
  EXPECT_NE(ok({"simulate", "--memory-limit", "10TiB", "--allow-over-memory"}).find("10.00 TiB limit"),
            std::string::npos);
  EXPECT_EQ(ok_json({"simulate", "--memory-limit", "2TB", "--allow-over-memory", "--format", "json"})
                ["memory_limit_bytes"].get<int64_t>(),
            2'000'000'000'000);
}

}  // namespace
