// End-to-end tests of `lorasim fit`: a profile fitted to measurement files.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

TEST(FitCliTest, FitPoolsSeveralMeasurementFilesLikeOne) {
  TempDir dir;
  const std::string header = "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes\n";
  const std::string a = "qwen3-1.7b,512,1,16,false,4.36,6612320256\nqwen3-1.7b,512,4,4,false,1.14,15780000000\n";
  const std::string b = "qwen3-1.7b,512,16,1,false,0.398,52460000000\nqwen3-1.7b,512,2,8,false,2.21,9670000000\n";
  write_file(dir / "a.csv", header + a);
  write_file(dir / "b.csv", header + b);
  write_file(dir / "all.csv", header + a + b);
  ok({"fit", "--measurements", (dir / "a.csv").string(), "--measurements", (dir / "b.csv").string(), "--gpu", "h200",
      "--out", (dir / "pooled.toml").string()});
  ok({"fit", "--measurements", (dir / "all.csv").string(), "--gpu", "h200", "--out", (dir / "one.toml").string()});
  // Same coefficients; only the provenance lines name the files.
  auto coefficients = [](const std::string& text) {
    return text.substr(text.find("[time]"), text.find("[calibration]") - text.find("[time]"));
  };
  const std::string pooled = read_file(dir / "pooled.toml");
  EXPECT_EQ(coefficients(pooled), coefficients(read_file(dir / "one.toml")));
  EXPECT_NE(pooled.find("--measurements " + (dir / "b.csv").string()), std::string::npos);

  // A missing second file is an error before anything is written.
  const fs::path out = dir / "never.toml";
  expect_error({"fit", "--measurements", (dir / "a.csv").string(), "--measurements", (dir / "gone.csv").string(),
                "--gpu", "h200", "--out", out.string()},
               kConfig, {"gone.csv"});
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
