// End-to-end tests of `--measured ROWS` on simulate and recommend: a tuner's rows replayed, the
// measured splits marked in table, CSV and JSON, rows of other workloads counted, bad inputs
// refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

// The boundary (issue 17, "What was measured"): qwen3-1.7b, 512 tokens, B=16, no
// checkpointing, 15 GiB. 4x4 ran at 14.02 GiB reserved (the prediction: 13.89 GiB, whose worst
// case does not fit) and was 1.8x faster than the 2x8 lorasim recommended.
const char* const kCapRows =
    "model,seq_len,micro_batch,accumulation,step_time_s,peak_reserved_bytes,grad_ckpt,stack\n"
    "qwen3-1.7b,512,4,4,1.02,15053946880,false,hf-peft\n"
    "qwen3-1.7b,512,2,8,1.84,9813295104,false,hf-peft\n"
    "qwen3-1.7b,1024,2,8,3.10,15032385536,false,hf-peft\n"   // another sequence length
    "qwen3-1.7b,512,2,4,0.93,8589934592,false,hf-peft\n";    // another effective batch

std::vector<std::string> cap_args(const std::string& command, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {command, "--gpu", "h200", "--model", "qwen3-1.7b", "--seq-len", "512",
                                "--effective-batch", "16", "--memory-limit", "15GiB",
                                // the case: no checkpointing (recommend would weigh both)
                                "--grad-ckpt", "false"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

const json& split_of(const json& j, int b) {
  for (const json& s : j["splits"])
    if (s["micro_batch"] == b) return s;
  static const json none;
  ADD_FAILURE() << "no split " << b;
  return none;
}

TEST(MeasuredCliTest, TheMeasuredBoundarySplitFitsAndIsRecommendedWhereThePredictionRefusesIt) {
  TempDir dir;
  write_file(dir / "rows.csv", kCapRows);
  const json predicted = ok_json(cap_args("recommend", {"--format", "json"}));
  EXPECT_FALSE(split_of(predicted, 4)["fits"]) << predicted.dump(2);
  EXPECT_EQ(predicted["recommended"]["micro_batch"], 2);

  const std::vector<std::string> args = cap_args("recommend", {"--format", "json", "--measured", (dir / "rows.csv").string()});
  const RunResult r = run_lorasim(args);
  ASSERT_EQ(r.exit_code, 0) << describe(args, r);
  const json j = json::parse(r.out);
  const json& s = split_of(j, 4);
  EXPECT_TRUE(s["measured"]);
  EXPECT_FALSE(s["measured_oom"]);
  EXPECT_TRUE(s["fits"]) << s.dump(2);
  EXPECT_EQ(s["step_time_s"], 1.02);
  EXPECT_EQ(s["peak_reserved_bytes"], 15053946880);
  EXPECT_EQ(s["worst_reserved_bytes"], static_cast<int64_t>(15053946880 * 1.015));
  EXPECT_TRUE(split_of(j, 2)["measured"]);
  EXPECT_EQ(split_of(j, 2)["step_time_s"], 1.84);
  EXPECT_FALSE(split_of(j, 1)["measured"]);
  EXPECT_EQ(split_of(j, 1)["step_time_s"], split_of(predicted, 1)["step_time_s"]);
  EXPECT_EQ(j["recommended"]["micro_batch"], 4);
  EXPECT_EQ(j["recommended"]["hf_args"], "--per_device_train_batch_size 4 --gradient_accumulation_steps 4 "
                                         "--gradient_checkpointing false --bf16 true");
  // The two rows of other workloads are counted on stderr, once.
  const std::vector<std::string> err = lines_of(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_NE(err[0].find("2 of 4 rows are of another workload"), std::string::npos) << r.err;
}

TEST(MeasuredCliTest, TheTableMarksMeasuredSplitsAndShowsTheWorstCaseThatDecidesFits) {
  TempDir dir;
  write_file(dir / "rows.csv", kCapRows);
  const std::string out = run_lorasim(cap_args("simulate", {"--measured", (dir / "rows.csv").string()})).out;
  EXPECT_NE(out.find("worst reserved"), std::string::npos) << out;
  bool found = false;
  for (const std::string& line : lines_of(out))
    if (line.find("    4      4") == 0) {
      found = true;
      EXPECT_NE(line.find("measured"), std::string::npos) << line;
      EXPECT_NE(line.find("14.02 GiB"), std::string::npos) << line;  // the measured peak
      EXPECT_NE(line.find("14.23 GiB"), std::string::npos) << line;  // plus 1.5%
      EXPECT_NE(line.find(" yes "), std::string::npos) << line;
    }
  EXPECT_TRUE(found) << out;
  EXPECT_NE(out.find("recommended: micro-batch 4 x accumulation 4"), std::string::npos) << out;
  EXPECT_NE(out.find("2 splits were measured"), std::string::npos) << out;
}

// Issue 17: "fits: no" for a split whose peak is under the usable line, with the deciding worst
// case only in JSON. The table prints it beside the peak.
TEST(MeasuredCliTest, TheWorstReservedColumnExplainsANoWhosePeakIsUnderTheUsableLine) {
  const std::vector<std::string> base = {"--gpu", "h200", "--model", "qwen3-1.7b", "--seq-len", "512",
                                         "--effective-batch", "16", "--memory-limit", "14.9GiB"};
  std::vector<std::string> args = {"simulate", "--format", "json"};
  args.insert(args.end(), base.begin(), base.end());
  const json j = ok_json(args);
  const json& s = split_of(j, 4);
  ASSERT_LT(s["peak_reserved_bytes"].get<double>(), j["usable_memory_bytes"].get<double>()) << j.dump(2);
  ASSERT_GT(s["worst_reserved_bytes"].get<double>(), j["usable_memory_bytes"].get<double>()) << j.dump(2);
  ASSERT_FALSE(s["fits"]);
  args = {"simulate"};
  args.insert(args.end(), base.begin(), base.end());
  const std::string out = ok(args);
  const std::vector<std::string> lines = lines_of(out);
  const auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("micro", 0) == 0; });
  ASSERT_NE(header, lines.end()) << out;
  const size_t worst_col = header->find("worst reserved"), fits_col = header->find("fits");
  ASSERT_NE(worst_col, std::string::npos) << *header;
  ASSERT_LT(worst_col, fits_col) << *header;
  for (const std::string& line : lines)
    if (line.rfind("    4      4", 0) == 0) {
      EXPECT_NE(line.find("13.89 GiB"), std::string::npos) << line;  // the peak
      EXPECT_NE(line.find("14.56 GiB"), std::string::npos) << line;  // the worst case, over the 14.40 usable
      EXPECT_NE(line.find("   no "), std::string::npos) << line;
    }
}

TEST(MeasuredCliTest, CsvEndsWithTheMeasuredColumn) {
  TempDir dir;
  write_file(dir / "rows.csv",
             "model,seq_len,micro_batch,accumulation,oom,step_time_s,grad_ckpt,stack\n"
             "qwen3-1.7b,512,16,1,true,,false,hf-peft\n"
             "qwen3-1.7b,512,1,16,false,3.5,false,hf-peft\n");
  const std::vector<std::string> lines =
      lines_of(ok(cap_args("simulate", {"--format", "csv", "--measured", (dir / "rows.csv").string()})));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].substr(lines[0].rfind(',') + 1), "measured");
  EXPECT_EQ(lines[1].rfind("1,16,3.5,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[1].substr(lines[1].rfind(',') + 1), "true");
  EXPECT_EQ(lines[3].substr(lines[3].rfind(',') + 1), "false");
  EXPECT_EQ(lines[5].substr(lines[5].rfind(',') + 1), "oom");
}

TEST(MeasuredCliTest, AMeasuredOutOfMemoryDoesNotFitEvenWhereThePredictionDoes) {
  TempDir dir;
  write_file(dir / "rows.csv",
             "model,seq_len,micro_batch,accumulation,oom,step_time_s,grad_ckpt,stack\n"
             "qwen3-1.7b,512,2,8,true,,false,hf-peft\n");
  const json j = ok_json(cap_args("recommend", {"--format", "json", "--measured", (dir / "rows.csv").string()}));
  EXPECT_TRUE(split_of(j, 2)["measured_oom"]);
  EXPECT_FALSE(split_of(j, 2)["fits"]);
  EXPECT_EQ(j["recommended"]["micro_batch"], 1);
  const std::string table = ok(cap_args("simulate", {"--measured", (dir / "rows.csv").string()}));
  EXPECT_NE(table.find("no (OOM)"), std::string::npos) << table;
}

TEST(MeasuredCliTest, SeveralFilesArePooled) {
  TempDir dir;
  write_file(dir / "a.csv", "model,seq_len,micro_batch,accumulation,step_time_s,stack\nqwen3-1.7b,512,4,4,1.0,hf-peft\n");
  write_file(dir / "b.csv", "model,seq_len,micro_batch,accumulation,step_time_s,stack\nqwen3-1.7b,512,4,4,2.0,hf-peft\n");
  const json j = ok_json(cap_args("simulate", {"--format", "json", "--measured", (dir / "a.csv").string(), "--measured",
                                               (dir / "b.csv").string()}));
  EXPECT_EQ(split_of(j, 4)["step_time_s"], 1.5);
}

TEST(MeasuredCliTest, RowsOfAnotherDeviceNeedAllowDeviceMismatch) {
  // tune's case (issue 28): its own trial rows of an H100, a base profile of another GPU given on purpose.
  TempDir dir;
  write_file(dir / "rows.csv",
             "model,seq_len,micro_batch,accumulation,step_time_s,peak_reserved_bytes,grad_ckpt,stack,device\n"
             "qwen3-1.7b,512,4,4,1.02,15053946880,false,hf-peft,NVIDIA H100 80GB HBM3\n");
  const std::string rows = (dir / "rows.csv").string();
  expect_error(cap_args("recommend", {"--measured", rows}), kUsage,
               {"ran on NVIDIA H100 80GB HBM3", "--allow-device-mismatch"});
  const json j = ok_json(cap_args("recommend", {"--format", "json", "--measured", rows, "--allow-device-mismatch"}));
  EXPECT_TRUE(split_of(j, 4)["measured"]);
  EXPECT_EQ(split_of(j, 4)["step_time_s"], 1.02);
  expect_error(cap_args("recommend", {"--allow-device-mismatch"}), kUsage, {"--allow-device-mismatch", "--measured"});
}

TEST(MeasuredCliTest, BadMeasuredInputsAreOneClearError) {
  TempDir dir;
  expect_error(cap_args("recommend", {"--measured", (dir / "missing.csv").string()}), kConfig, {"missing.csv"});
  expect_error(cap_args("recommend", {"--measured", ""}), kUsage, {"--measured"});
  write_file(dir / "rows.csv", kCapRows);
  write_file(dir / "lengths.txt", "100\n200\n512\n");
  expect_error({"recommend", "--gpu", "h200", "--effective-batch", "16", "--measured", (dir / "rows.csv").string(),
                "--lengths", (dir / "lengths.txt").string()},
               kUsage, {"--measured", "fixed-length"});
}

}  // namespace
