// `lorasim train --lengths`: a run on micro-batches drawn from a lengths file, whose saved row
// validate predicts from its own widths. Needs lorasim-train (a LibTorch build); skips without.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

bool have_train_binary() { return fs::exists(fs::path(LORASIM_BIN).parent_path() / "lorasim-train"); }

TEST(TrainLengthsCliTest, ARunOnALengthsFileSavesARowThatValidateScoresByItsWidths) {
  if (!have_train_binary()) GTEST_SKIP() << "built without LibTorch: no lorasim-train";
  TempDir dir;
  const fs::path lengths = dir / "lengths.csv", row = dir / "run.csv";
  write_file(lengths, "length,count\n9,6\n20,5\n48,2\n");
  const std::vector<std::string> args = {"train", "--device", "cpu", "--model", "tiny", "--micro-batch", "2",
                                         "--accum", "2", "--lengths", lengths.string(), "--padding", "multiple:8",
                                         "--max-length", "40", "--seed", "4", "--steps", "2", "--warmup", "0",
                                         "--format", "json", "--save-measurements", row.string()};
  const RunResult r = run_lorasim(args);  // progress on stderr
  ASSERT_EQ(r.exit_code, 0) << describe(args, r);
  const json j = json::parse(r.out);
  EXPECT_EQ(j["collation"], "multiple:8");
  const std::string widths = j["padded_lengths"];
  EXPECT_FALSE(widths.empty());
  EXPECT_EQ(j["workload"]["seq_len"], 40);  // the file's lengths truncated at --max-length
  EXPECT_GT(j["real_tokens"].get<double>(), 0);
  // A fresh process without a warm-up: each distinct width (every micro-batch is 2 rows) is one
  // new shape, over 2 timed steps.
  const double distinct = static_cast<double>(std::count(widths.begin(), widths.end(), ';') + 1);
  ASSERT_GT(distinct, 1);  // seed 4 meets several widths (one would record 0)
  EXPECT_EQ(j["new_shapes_per_step"].get<double>(), distinct / 2);
  const json v = ok_json({"validate", "--measurements", row.string(), "--gpu", "h200", "--format", "json"});
  ASSERT_EQ(v["groups"].size(), 1u);
  EXPECT_EQ(v["groups"][0]["splits"][0]["predicted_from"], "padded_lengths");
  EXPECT_EQ(v["groups"][0]["splits"][0]["micro_batch"], 2);
}

TEST(TrainLengthsCliTest, LengthsFlagsThatTheRunnerCannotHonourAreRefusedBeforeTraining) {
  if (!have_train_binary()) GTEST_SKIP() << "built without LibTorch: no lorasim-train";
  TempDir dir;
  const fs::path lengths = dir / "lengths.txt";
  write_file(lengths, "9\n20\n");
  const std::vector<std::string> base = {"train", "--device", "cpu", "--model", "tiny", "--lengths", lengths.string()};
  expect_error(with(base, {"--seq-len", "16"}), kUsage, {"drop --seq-len"});
  expect_error(with(base, {"--group-by-length"}), kUsage, {"--group-by-length"});
  expect_error(with(base, {"--padding", "packed"}), kUsage, {"packed"});
  expect_error({"train", "--device", "cpu", "--model", "tiny", "--padding", "longest"}, kUsage,
               {"--padding needs --lengths FILE"});
}

}  // namespace
