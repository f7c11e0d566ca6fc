// End-to-end tests of --trainer sft|trainer|loop: each preset sets the hf-peft options as that
// program runs them, an explicit flag overrides its preset, and a preset off hf-peft is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

json simulate_json(const std::string& command, std::initializer_list<std::string> more) {
  std::vector<std::string> v = {command, "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16"};
  v.insert(v.end(), more);
  v.insert(v.end(), {"--format", "json"});
  return ok_json(v);
}

TEST(TrainerPresetCliTest, SftIsTrlsDefaults) {
  const json j = simulate_json("simulate", {"--trainer", "sft"});
  EXPECT_EQ(j["workload"]["trainer"], "sft");
  EXPECT_EQ(j["workload"]["grad_ckpt"], true);
  EXPECT_EQ(j["workload"]["stack"]["fused_lm_head"], true);
  EXPECT_EQ(j["workload"]["stack"]["autocast"], true);
  EXPECT_EQ(j["workload"]["precision"], "bf16");
  EXPECT_EQ(j["recommended"]["training_arguments"]["gradient_checkpointing"], true);
  // The same figures as the flags it stands for.
  const json flags = simulate_json("simulate", {"--grad-ckpt", "--fused-lm-head", "true"});
  EXPECT_EQ(j["splits"], flags["splits"]);
}

TEST(TrainerPresetCliTest, RecommendWithSftStillWeighsCheckpointing) {
  const json j = simulate_json("recommend", {"--trainer", "sft"});
  EXPECT_EQ(j["workload"]["grad_ckpt"], "auto");
  EXPECT_EQ(j["splits"].size(), 10u);
  EXPECT_EQ(j["workload"]["stack"]["fused_lm_head"], true);
  // SFTConfig turns checkpointing on unless told: the flags always say which.
  EXPECT_NE(j["recommended"]["hf_args"].get<std::string>().find("--gradient_checkpointing "), std::string::npos);
}

TEST(TrainerPresetCliTest, SftOnATeslaT4IsFp16) {
  const json j = ok_json({"recommend", "--gpu", "t4", "--model", "qwen3-1.7b", "--effective-batch", "4", "--trainer",
                          "sft", "--format", "json"});
  EXPECT_EQ(j["workload"]["precision"], "fp16");
  EXPECT_EQ(j["recommended"]["training_arguments"]["fp16"], true);
  EXPECT_EQ(j["recommended"]["training_arguments"]["bf16"], false);
}

TEST(TrainerPresetCliTest, TrainerIsTheStacksDefaultsAndLoopHasNoAutocast) {
  const json trainer = simulate_json("simulate", {"--trainer", "trainer"});
  const json plain = simulate_json("simulate", {});
  EXPECT_EQ(trainer["workload"]["stack"], plain["workload"]["stack"]);
  EXPECT_EQ(trainer["splits"], plain["splits"]);
  EXPECT_EQ(trainer["workload"]["grad_ckpt"], false);

  const json loop = simulate_json("simulate", {"--trainer", "loop"});
  EXPECT_EQ(loop["workload"]["stack"]["autocast"], false);
  EXPECT_EQ(loop["workload"]["stack"]["fused_lm_head"], false);
  EXPECT_EQ(loop["splits"], simulate_json("simulate", {"--autocast", "false"})["splits"]);
  EXPECT_EQ(loop["recommended"]["training_arguments"]["bf16"], false);
  EXPECT_EQ(loop["recommended"]["training_arguments"]["fp16"], false);
}

TEST(TrainerPresetCliTest, AnExplicitFlagOverridesThePreset) {
  const json j = simulate_json("simulate", {"--trainer", "sft", "--fused-lm-head", "false", "--grad-ckpt", "false"});
  EXPECT_EQ(j["workload"]["stack"]["fused_lm_head"], false);
  EXPECT_EQ(j["workload"]["grad_ckpt"], false);
  const json loop = simulate_json("simulate", {"--autocast", "true", "--trainer", "loop"});  // order does not matter
  EXPECT_EQ(loop["workload"]["stack"]["autocast"], true);
}

TEST(TrainerPresetCliTest, SftTruncatesLengthsAt1024UnlessToldOtherwise) {
  TempDir dir;
  write_file(dir / "lengths.csv", "length,count\n64,300\n256,120\n1500,6\n");
  const std::string file = (dir / "lengths.csv").string();
  EXPECT_EQ(simulate_json("simulate", {"--trainer", "sft", "--lengths", file})["lengths"]["max_length_tokens"], 1024);
  EXPECT_EQ(simulate_json("simulate", {"--trainer", "sft", "--lengths", file})["lengths"]["padding"], "longest");
  EXPECT_EQ(simulate_json("simulate", {"--trainer", "sft", "--lengths", file, "--max-length", "2048"})["lengths"]
               ["max_length_tokens"],
            2048);
  EXPECT_EQ(simulate_json("simulate", {"--trainer", "trainer", "--lengths", file})["lengths"]["max_length_tokens"],
            1500);
}

TEST(TrainerPresetCliTest, BadPresetsAreRefusedNamingTheFlag) {
  expect_error({"simulate", "--trainer", "sfttrainer"}, kUsage, {"--trainer must be sft, trainer, loop or lightning, got 'sfttrainer'"});
  expect_error({"recommend", "--trainer", "sft", "--stack", "lorasim"}, kUsage,
               {"--trainer sft describes a program of the hf-peft stack, not --stack lorasim"});
  expect_error({"simulate", "--trainer", "lightning", "--stack", "lorasim"}, kUsage,
               {"--trainer lightning describes a program of the lightning stack, not --stack lorasim"});
}

}  // namespace
