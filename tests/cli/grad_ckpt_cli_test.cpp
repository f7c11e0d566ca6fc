// End-to-end tests of --grad-ckpt auto|true|false and the TrainingArguments a recommendation
// assumed: recommend weighs checkpointing by default, simulate shows both where asked, and the
// HF flags line and JSON say gradient_checkpointing and the precision flag.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

std::vector<std::string> cmd(const std::string& command, std::initializer_list<std::string> more) {
  std::vector<std::string> v = {command, "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16",
                                "--seq-len", "512"};
  v.insert(v.end(), more);
  return v;
}

TEST(GradCkptCliTest, RecommendWeighsBothSettingsByDefault) {
  const json j = ok_json(cmd("recommend", {"--format", "json"}));
  EXPECT_EQ(j["workload"]["grad_ckpt"], "auto");
  ASSERT_EQ(j["splits"].size(), 10u);  // five splits, off and on
  for (size_t i = 0; i < j["splits"].size(); ++i) EXPECT_EQ(j["splits"][i]["grad_ckpt"], i % 2 == 1) << i;
  ASSERT_TRUE(j["recommended"].is_object());
  // Plenty of room on an H200: recomputation is pure cost.
  EXPECT_EQ(j["recommended"]["grad_ckpt"], false);
  EXPECT_EQ(j["recommended"]["training_arguments"],
            (json{{"per_device_train_batch_size", 16}, {"gradient_accumulation_steps", 1},
                  {"gradient_checkpointing", false}, {"bf16", true}, {"fp16", false}}));
  EXPECT_EQ(j["recommended"]["hf_args"],
            "--per_device_train_batch_size 16 --gradient_accumulation_steps 1 --gradient_checkpointing false "
            "--bf16 true");
}

TEST(GradCkptCliTest, OnA12GibCapTheCheckpointedLargerMicroBatchIsRecommended) {
  // Without checkpointing 2x8 is the largest that fits (4x4's worst case 15.2 GiB); with it 4x4
  // does (8.7 GiB; 8x2's 13.6 GiB does not), and four micro-batches beat eight.
  const std::string out = ok(cmd("recommend", {"--memory-limit", "12GiB"}));
  EXPECT_NE(out.find("recommended: micro-batch 4 x accumulation 4 with gradient checkpointing"), std::string::npos)
      << out;
  EXPECT_NE(out.find("HF TrainingArguments: --per_device_train_batch_size 4 --gradient_accumulation_steps 4 "
                     "--gradient_checkpointing true --bf16 true\n"),
            std::string::npos)
      << out;
  // Told not to checkpoint, recommend keeps to it.
  const std::string off = ok(cmd("recommend", {"--memory-limit", "12GiB", "--grad-ckpt", "false"}));
  EXPECT_NE(off.find("recommended: micro-batch 2 x accumulation 8: "), std::string::npos) << off;
  EXPECT_NE(off.find("--gradient_checkpointing false"), std::string::npos) << off;
}

TEST(GradCkptCliTest, ATeslaT4GetsFp16) {
  const json j = ok_json({"recommend", "--gpu", "t4", "--model", "qwen3-1.7b", "--effective-batch", "4", "--seq-len",
                          "512", "--format", "json"});
  EXPECT_EQ(j["recommended"]["training_arguments"]["fp16"], true);
  EXPECT_EQ(j["recommended"]["training_arguments"]["bf16"], false);
  EXPECT_NE(j["recommended"]["hf_args"].get<std::string>().find("--fp16 true"), std::string::npos);
  EXPECT_EQ(j["recommended"]["hf_args"].get<std::string>().find("bf16"), std::string::npos);
}

TEST(GradCkptCliTest, NoMixedPrecisionSaysBothFlagsOff) {
  for (const auto& more : {std::vector<std::string>{"--autocast", "false"}, {"--precision", "fp32"}}) {
    std::vector<std::string> args = cmd("recommend", {"--format", "json"});
    args.insert(args.end(), more.begin(), more.end());
    const json j = ok_json(args);
    EXPECT_EQ(j["recommended"]["training_arguments"]["bf16"], false) << more[0];
    EXPECT_EQ(j["recommended"]["training_arguments"]["fp16"], false) << more[0];
    EXPECT_NE(j["recommended"]["hf_args"].get<std::string>().find("--bf16 false --fp16 false"), std::string::npos);
  }
}

TEST(GradCkptCliTest, SimulateKeepsOneSettingUnlessAskedForBoth) {
  const json fixed = ok_json(cmd("simulate", {"--format", "json"}));
  EXPECT_EQ(fixed["workload"]["grad_ckpt"], false);
  ASSERT_EQ(fixed["splits"].size(), 5u);
  for (const json& s : fixed["splits"]) EXPECT_EQ(s["grad_ckpt"], false);
  EXPECT_EQ(ok(cmd("simulate", {})).find(" ckpt "), std::string::npos);

  const std::string both = ok(cmd("simulate", {"--grad-ckpt", "auto"}));
  EXPECT_NE(both.find("micro  accum  ckpt"), std::string::npos) << both;
  EXPECT_NE(both.find("grad ckpt auto"), std::string::npos) << both;
  const std::vector<std::string> csv = lines_of(ok(cmd("simulate", {"--grad-ckpt", "auto", "--format", "csv"})));
  ASSERT_EQ(csv.size(), 11u);
  EXPECT_NE(csv[0].find(",grad_ckpt,measured"), csv[0].npos);  // grad_ckpt is the last but one
  const auto ckpt_cell = [](const std::string& line) {
    const std::string head = line.substr(0, line.rfind(','));
    return head.substr(head.rfind(',') + 1);
  };
  EXPECT_EQ(ckpt_cell(csv[1]), "false");
  EXPECT_EQ(ckpt_cell(csv[2]), "true");
}

TEST(GradCkptCliTest, TheBareSwitchStillMeansTrue) {
  for (const auto& spelling : {std::vector<std::string>{"--grad-ckpt"}, {"--grad-ckpt", "true"}, {"--grad-ckpt=true"}}) {
    std::vector<std::string> args = cmd("simulate", {});
    args.insert(args.begin() + 1, spelling.begin(), spelling.end());  // also right before another flag
    args.insert(args.end(), {"--format", "json"});
    const json j = ok_json(args);
    EXPECT_EQ(j["workload"]["grad_ckpt"], true) << spelling.size();
    EXPECT_EQ(j["splits"].size(), 5u);
  }
  // Last on the line, with no word after it.
  const std::string last = ok(cmd("simulate", {"--grad-ckpt"}));
  EXPECT_NE(last.find(", grad ckpt, "), std::string::npos) << last;
  const json off = ok_json(cmd("recommend", {"--grad-ckpt", "false", "--format", "json"}));
  EXPECT_EQ(off["workload"]["grad_ckpt"], false);
  EXPECT_EQ(off["splits"].size(), 5u);
}

TEST(GradCkptCliTest, AnotherValueIsRefusedNamingTheFlag) {
  expect_error(cmd("simulate", {"--grad-ckpt", "maybe"}), kUsage, {"--grad-ckpt must be auto, true or false, got 'maybe'"});
  expect_error(cmd("recommend", {"--grad-ckpt=yes"}), kUsage, {"--grad-ckpt must be auto, true or false, got 'yes'"});
  expect_error(cmd("simulate", {"--grad-ckpt", ""}), kUsage, {"--grad-ckpt must be auto, true or false, got ''"});
  expect_error(cmd("simulate", {"--grad-ckpt="}), kUsage, {"--grad-ckpt must be auto, true or false, got ''"});
}

TEST(GradCkptCliTest, ThePlotLabelsTheCheckpointedSplits) {
  TempDir dir;
  const std::string svg = (dir / "splits.svg").string();
  ok(cmd("simulate", {"--grad-ckpt", "auto", "--plot", svg}));
  const std::string text = read_file(svg);
  EXPECT_NE(text.find("4 x 4 ckpt"), std::string::npos);
  EXPECT_NE(text.find("4 x 4<"), std::string::npos);
}

TEST(GradCkptCliTest, WithLengthsTheRecommendationIsTheFastestEpochOfEitherSetting) {
  TempDir dir;
  write_file(dir / "lengths.csv", "length,count\n64,300\n256,120\n1500,6\n");
  const json j = ok_json({"recommend", "--gpu", "l4", "--model", "qwen3-1.7b", "--effective-batch", "16", "--lengths",
                          (dir / "lengths.csv").string(), "--max-length", "1024", "--format", "json"});
  ASSERT_EQ(j["splits"].size(), 10u);
  ASSERT_TRUE(j["recommended"].is_object());
  double fastest = 1e300;
  for (const json& s : j["splits"])
    if (s["fits"].get<bool>()) fastest = std::min(fastest, s["epoch_time_s"].get<double>());
  EXPECT_EQ(j["recommended"]["epoch_time_s"].get<double>(), fastest);
  const json& args = j["recommended"]["training_arguments"];
  EXPECT_EQ(args["gradient_checkpointing"], j["recommended"]["grad_ckpt"]);
  EXPECT_EQ(args["group_by_length"], false);
  EXPECT_EQ(args["bf16"], true);
}

}  // namespace
