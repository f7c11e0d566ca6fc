// End-to-end tests of `lorasim validate --measurements` on data of many lengths: rows with
// padded_lengths predicted from their own widths, rows without from --lengths, and which was
// used said per split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::string kHeader =
    "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes,stack,collation,padded_lengths,"
    "real_tokens\n";

json simulated_split(const std::vector<std::string>& args, int64_t micro_batch) {
  const json j = ok_json(with(args, {"--format", "json"}));
  for (const auto& s : j["splits"])
    if (s["micro_batch"] == micro_batch) return s;
  ADD_FAILURE() << "no split " << micro_batch;
  return json();
}

const std::vector<std::string> kSimulate = {"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--stack",
                                            "hf-peft", "--effective-batch", "16"};

TEST(ValidateLengthsTest, ARowWithOneWidthIsPredictedAsSimulateAtThatLength) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  write_file(runs, kHeader + "qwen3-1.7b,768,4,4,false,0.9,30000000000,hf-peft,longest,768:16,2500\n");
  const json j = ok_json({"validate", "--measurements", runs.string(), "--gpu", "h200", "--format", "json"});
  const json& s = j["groups"][0]["splits"][0];
  EXPECT_EQ(s["predicted_from"], "padded_lengths");
  const json f = simulated_split(with(kSimulate, {"--seq-len", "768"}), 4);
  EXPECT_DOUBLE_EQ(s["predicted_step_time_s"].get<double>(), f["step_time_s"].get<double>());
  // simulate's JSON prints bytes whole.
  EXPECT_NEAR(s["predicted_peak_reserved_bytes"].get<double>(), f["peak_reserved_bytes"].get<double>(), 1);
  EXPECT_NEAR(s["predicted_worst_reserved_bytes"].get<double>(), f["worst_reserved_bytes"].get<double>(), 1);
}

TEST(ValidateLengthsTest, ARowWithManyWidthsIsPricedByThemAndItsPeakAtTheLargest) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  // 16x1 is device-bound at 1024 tokens on the H200 (host-bound at 256), so the widths show.
  write_file(runs, kHeader + "qwen3-1.7b,1024,16,1,false,0.5,60000000000,hf-peft,longest,256:4;512:8;1024:4,6000\n");
  const json j = ok_json({"validate", "--measurements", runs.string(), "--gpu", "h200", "--format", "json"});
  const json& s = j["groups"][0]["splits"][0];
  EXPECT_EQ(s["predicted_from"], "padded_lengths");
  EXPECT_NE(j["groups"][0]["workload"].get<std::string>().find(" padding=longest "), std::string::npos);
  const double step = s["predicted_step_time_s"];
  EXPECT_GT(step, simulated_split(with(kSimulate, {"--seq-len", "256"}), 16)["step_time_s"].get<double>());
  EXPECT_LT(step, simulated_split(with(kSimulate, {"--seq-len", "1024"}), 16)["step_time_s"].get<double>());
  // The largest width's memory plus the allocator's hold for shapes that varied.
  const json widest = simulated_split(with(kSimulate, {"--seq-len", "1024"}), 16);
  EXPECT_GT(s["predicted_peak_reserved_bytes"].get<double>(), widest["peak_reserved_bytes"].get<double>());
  EXPECT_GT(s["predicted_worst_reserved_bytes"].get<double>(), widest["worst_reserved_bytes"].get<double>());
}

TEST(ValidateLengthsTest, RowsWithoutAHistogramArePredictedFromTheLengthsFile) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv", lengths = dir / "lengths.csv";
  write_file(lengths, "length,count\n100,50\n300,40\n1024,10\n");
  write_file(runs, kHeader + "qwen3-1.7b,1024,4,4,false,0.9,30000000000,hf-peft,longest,,\n"
                             "qwen3-1.7b,1024,2,8,false,1.2,20000000000,hf-peft,longest,256:4;512:8;1024:4,\n");
  const json j = ok_json({"validate", "--measurements", runs.string(), "--gpu", "h200", "--lengths", lengths.string(),
                          "--padding", "longest", "--format", "json"});
  ASSERT_EQ(j["groups"].size(), 2u);
  const json& from_file = j["groups"][0]["splits"][0];
  EXPECT_EQ(from_file["predicted_from"], "lengths_file");
  const json l = simulated_split(with(kSimulate, {"--lengths", lengths.string(), "--padding", "longest"}), 4);
  EXPECT_DOUBLE_EQ(from_file["predicted_step_time_s"].get<double>(), l["step_time_s"].get<double>());
  EXPECT_NEAR(from_file["predicted_peak_reserved_bytes"].get<double>(), l["peak_reserved_bytes"].get<double>(), 1);
  EXPECT_NEAR(from_file["predicted_worst_reserved_bytes"].get<double>(), l["worst_reserved_bytes"].get<double>(), 1);
  EXPECT_EQ(j["groups"][1]["splits"][0]["predicted_from"], "padded_lengths");

  const std::vector<std::string> csv = lines_of(ok({"validate", "--measurements", runs.string(), "--gpu", "h200",
                                                    "--lengths", lengths.string(), "--format", "csv"}));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_EQ(csv[0].substr(csv[0].rfind(',')), ",predicted_from");
  EXPECT_EQ(csv[1].substr(csv[1].rfind(',')), ",lengths_file");
  EXPECT_EQ(csv[2].substr(csv[2].rfind(',')), ",padded_lengths");
  const std::string table = ok({"validate", "--measurements", runs.string(), "--gpu", "h200"});
  EXPECT_NE(table.find("predicted from"), std::string::npos);
  EXPECT_NE(table.find("seq_len"), std::string::npos);
  EXPECT_NE(table.find("padded_lengths"), std::string::npos);
}

TEST(ValidateLengthsTest, AFileOfFixedLengthsPrintsWhatItPrintedBefore) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  write_file(runs, "model,seq_len,micro_batch,accumulation,step_time_s\nqwen3-1.7b,512,4,4,0.6\n");
  const std::string out = ok({"validate", "--measurements", runs.string(), "--gpu", "h200", "--format", "json"});
  EXPECT_EQ(out.find("predicted_from"), std::string::npos);
  EXPECT_EQ(ok({"validate", "--measurements", runs.string(), "--gpu", "h200"}).find("predicted from"), std::string::npos);
}

TEST(ValidateLengthsTest, TheLengthsFlagsAreRefusedWhereTheyMeanNothing) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv", lengths = dir / "lengths.txt";
  write_file(runs, "model,seq_len,micro_batch,accumulation,step_time_s\nqwen3-1.7b,512,4,4,0.6\n");
  write_file(lengths, "100\n200\n");
  expect_error({"validate", "--gpu", "h200", "--model", "tiny", "--lengths", lengths.string()}, kUsage,
               {"validate --lengths predicts the rows of a measurement file", "--measurements FILE"});
  expect_error({"validate", "--measurements", runs.string(), "--gpu", "h200", "--padding", "longest"}, kUsage,
               {"--padding needs --lengths FILE"});
  expect_error({"validate", "--measurements", runs.string(), "--gpu", "h200", "--lengths", (dir / "none").string()},
               kConfig, {"none"});
  expect_error({"validate", "--measurements", runs.string(), "--gpu", "h200", "--lengths", lengths.string(),
                "--padding", "shortest"},
               kUsage, {"--padding"});
}

}  // namespace
