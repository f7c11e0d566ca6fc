// End-to-end tests of `lorasim simulate` and `recommend` with --lengths: the figures each format
// carries, and one error line for a bad file or a flag that does not go with the others.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const char* kHistogram = "# lengths\nlength,count\n64,300\n256,120\n1500,6\n";

TEST(LengthsCliTest, SimulateJsonCarriesTheLengthFiguresOfEverySplit) {
  TempDir dir;
  write_file(dir / "lengths.csv", kHistogram);
  const std::string file = (dir / "lengths.csv").string();
  const json j = ok_json({"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--lengths", file, "--max-length",
                          "1024", "--effective-batch", "16", "--format", "json"});
  expect_splits_json(j, 16);
  EXPECT_EQ(j["lengths"]["max_length_tokens"], 1024);
  EXPECT_EQ(j["lengths"]["longest_tokens"], 1024);  // truncated
  EXPECT_EQ(j["lengths"]["sequences"], 426);
  EXPECT_EQ(j["lengths"]["padding"], "longest");
  for (const json& s : j["splits"]) {
    EXPECT_GT(s["step_time_p99_s"].get<double>(), 0);
    EXPECT_EQ(s["steps_per_epoch"], 27);  // ceil(426 / 16)
    // The epoch: 27 steady steps, the new shapes of its first pass at the run's cost per new
    // shape (the mean step's new-shape time over its new shapes), and the process's first step.
    const double steady = s["step_time_s"].get<double>() - s["new_shape_time_s"].get<double>();
    ASSERT_GT(s["new_shapes_per_step"].get<double>(), 0);
    const double per_shape = s["new_shape_time_s"].get<double>() / s["new_shapes_per_step"].get<double>();
    EXPECT_EQ(s["first_step_s"].get<double>(), 0.46);  // hf-peft's, Transformers' loss (the default): once per process
    EXPECT_NEAR(s["epoch_time_s"].get<double>(),
                27 * steady + per_shape * s["new_shapes_per_epoch"].get<double>() + s["first_step_s"].get<double>(),
                1e-9 * s["epoch_time_s"].get<double>());
    EXPECT_LE(s["new_shapes_per_epoch"].get<double>(), 27 * s["accumulation"].get<double>());
    // The epoch's range is its steps' range, which one process's 27 steps share; its high end
    // also holds the first run on a machine's cold start.
    EXPECT_EQ(s["cold_start_s"].get<double>(), 5.5);
    EXPECT_NEAR(s["epoch_time_high_s"].get<double>() - s["epoch_time_s"].get<double>(),
                27 * (s["step_time_high_s"].get<double>() - s["step_time_s"].get<double>()) + 5.5,
                1e-9 * s["epoch_time_s"].get<double>());
    EXPECT_NEAR(s["epoch_time_s"].get<double>() - s["epoch_time_low_s"].get<double>(),
                27 * (s["step_time_s"].get<double>() - s["step_time_low_s"].get<double>()), 1e-9 * s["epoch_time_s"].get<double>());
    EXPECT_LT(s["epoch_time_low_s"].get<double>(), s["epoch_time_s"].get<double>());
    EXPECT_EQ(s["worst_padded_length_tokens"], 1024);
    EXPECT_GE(s["worst_reserved_bytes"].get<int64_t>(), s["peak_reserved_bytes"].get<int64_t>());
    const double pad = s["padding_fraction"].get<double>();
    EXPECT_TRUE(pad >= 0 && pad < 1) << pad;
  }
  // 16x1: a fifth of the micro-batches hold a 1024-token sequence, so the p99 step is theirs. (The
  // mean may exceed the p99 where fewer than 1% of the steps are long.)
  EXPECT_GT(j["splits"][4]["step_time_p99_s"].get<double>(), j["splits"][4]["step_time_s"].get<double>());
  EXPECT_EQ(j["splits"][0]["padding_fraction"], 0);  // one sequence per micro-batch: nothing padded
  ASSERT_TRUE(j["recommended"].is_object());
  EXPECT_TRUE(j["recommended"].contains("epoch_time_s"));
}

TEST(LengthsCliTest, TableAndCsvShowTheMeanP99PaddingAndEpoch) {
  TempDir dir;
  write_file(dir / "lengths.txt", "length\n100\n200\n200\n900\n");
  const std::string file = (dir / "lengths.txt").string();
  const std::string table = ok({"simulate", "--lengths", file, "--effective-batch", "4", "--padding", "multiple:64"});
  for (const char* want : {"step (mean)", "p99", "epoch", "padding", "worst reserved", "padding multiple:64",
                           "4 sequences, 100 to 900 tokens"})
    EXPECT_NE(table.find(want), std::string::npos) << want << "\n" << table;
  const std::vector<std::string> csv = lines_of(ok({"simulate", "--lengths", file, "--effective-batch", "4", "--format", "csv"}));
  ASSERT_EQ(csv.size(), 4u);  // header and splits 1, 2, 4
  EXPECT_EQ(csv[0].rfind("micro_batch,accumulation,step_time_s,step_time_p99_s,padding_fraction,epoch_time_s,", 0), 0u);
  const std::string rec = ok({"recommend", "--lengths", file, "--effective-batch", "4", "--group-by-length"});
  EXPECT_NE(rec.find("per epoch"), std::string::npos) << rec;
  EXPECT_NE(rec.find("--group_by_length true"), std::string::npos) << rec;
}

TEST(LengthsCliTest, BadFilesAreOneErrorNamingTheFile) {
  TempDir dir;
  expect_error({"simulate", "--lengths", (dir / "missing.csv").string()}, kConfig, {"missing.csv"});
  write_file(dir / "zero.csv", "length,count\n100,3\n0,2\n");
  expect_error({"simulate", "--lengths", (dir / "zero.csv").string()}, kConfig, {"zero.csv:3", "positive"});
  write_file(dir / "empty.csv", "# nothing\n");
  expect_error({"recommend", "--lengths", (dir / "empty.csv").string()}, kConfig, {"empty.csv"});
}

TEST(LengthsCliTest, FlagsThatDoNotGoTogetherAreRefused) {
  TempDir dir;
  write_file(dir / "l.csv", kHistogram);
  const std::string file = (dir / "l.csv").string();
  expect_error({"simulate", "--lengths", file, "--seq-len", "512"}, kUsage, {"--seq-len", "--max-length"});
  for (const char* flag : {"--padding", "--max-length"})
    expect_error({"simulate", flag, std::string(flag) == "--padding" ? "packed" : "512"}, kUsage,
                 {flag, "needs --lengths"});
  expect_error({"recommend", "--group-by-length"}, kUsage, {"--group-by-length", "needs --lengths"});
  expect_error({"simulate", "--lengths", file, "--padding", "shortest"}, kUsage, {"--padding", "multiple:N"});
  expect_error({"simulate", "--lengths", file, "--padding", "multiple:0"}, kUsage, {"--padding"});
  expect_error({"simulate", "--lengths", file, "--max-length", "0"}, kUsage, {"--max-length"});
}

TEST(LengthsCliTest, ThePlotShowsTheP99StepAndTheWorstMicroBatch) {
  TempDir dir;
  write_file(dir / "lengths.csv", kHistogram);
  const std::string svg = (dir / "splits.svg").string();
  ok_json({"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--lengths", (dir / "lengths.csv").string(),
           "--max-length", "1024", "--effective-batch", "16", "--format", "json", "--plot", svg});
  const std::string text = read_file(svg);
  for (const char* label : {"mean step, expected peak", "p99 step, worst micro-batch",
                            "lengths up to 1024, padding longest"})
    EXPECT_NE(text.find(label), std::string::npos) << label;
  // Fixed-length data keeps its one series per panel and says its sequence length.
  const std::string fixed = (dir / "fixed.svg").string();
  ok_json({"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--seq-len", "1024", "--effective-batch", "16",
           "--format", "json", "--plot", fixed});
  const std::string plain = read_file(fixed);
  EXPECT_EQ(plain.find("p99 step"), std::string::npos);
  EXPECT_NE(plain.find("seq len 1024"), std::string::npos);
}

}  // namespace
