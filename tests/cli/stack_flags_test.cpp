// End-to-end tests of the training-stack flags (issue 11): --stack, --attn-impl,
// --lora-dropout, --allocator and --autocast on every workload-taking command, every output
// naming the stack, and bad values refused naming their flag.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::vector<std::string> kSimulate = {"simulate", "--gpu", "h200", "--model", "qwen3-1.7b",
                                            "--effective-batch", "16", "--seq-len", "512"};

std::vector<std::string> with(std::vector<std::string> base, std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}

TEST(StackFlagsTest, SimulateAndRecommendDefaultToHfPeftWithItsDefaults) {
  const json want = {{"kind", "hf-peft"}, {"attn_impl", "sdpa"}, {"lora_dropout", 0.0},
                     {"allocator", "default"}, {"autocast", true}, {"fused_lm_head", false}};
  EXPECT_EQ(ok_json(with(kSimulate, {"--format", "json"}))["workload"]["stack"], want);
  std::vector<std::string> rec = kSimulate;
  rec[0] = "recommend";
  EXPECT_EQ(ok_json(with(rec, {"--format", "json"}))["workload"]["stack"], want);
}

TEST(StackFlagsTest, EveryFlagReachesTheWorkload) {
  const json j = ok_json(with(kSimulate, {"--stack", "hf-peft", "--attn-impl", "eager", "--lora-dropout", "0.05",
                                          "--allocator", "expandable", "--autocast", "false", "--fused-lm-head", "true",
                                          "--format", "json"}));
  EXPECT_EQ(j["workload"]["stack"], (json{{"kind", "hf-peft"}, {"attn_impl", "eager"}, {"lora_dropout", 0.05},
                                         {"allocator", "expandable"}, {"autocast", false}, {"fused_lm_head", true}}));
  // --stack lorasim alone is the runner as it runs: no dropout, no autocast, expandable segments.
  EXPECT_EQ(ok_json(with(kSimulate, {"--stack", "lorasim", "--format", "json"}))["workload"]["stack"],
            (json{{"kind", "lorasim"}, {"attn_impl", "sdpa"}, {"lora_dropout", 0.0}, {"allocator", "expandable"},
                  {"autocast", false}, {"fused_lm_head", false}}));
  EXPECT_EQ(ok_json(with(kSimulate, {"--stack", "lorasim", "--allocator", "default", "--format", "json"}))
                ["workload"]["stack"]["allocator"],
            "default");
}

TEST(StackFlagsTest, TheTextHeaderNamesTheStack) {
  const std::string out = ok(kSimulate);
  EXPECT_NE(out.find("\nstack:     hf-peft (sdpa, dropout 0, autocast, default allocator)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("HF TrainingArguments: --per_device_train_batch_size"), std::string::npos) << out;
  std::vector<std::string> rec = kSimulate;
  rec[0] = "recommend";
  const std::string r = ok(with(rec, {"--lora-dropout", "0.1", "--autocast", "false"}));
  EXPECT_NE(r.find("\nstack:     hf-peft (sdpa, dropout 0.1, no autocast, default allocator)\n"), std::string::npos)
      << r;
  EXPECT_NE(ok(with(kSimulate, {"--stack", "lorasim"})).find("\nstack:     lorasim (LibTorch runner)\n"),
            std::string::npos);
}

TEST(StackFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  expect_error(with(kSimulate, {"--stack", "trl"}), kUsage, {"--stack", "unknown stack 'trl'", "hf-peft", "lorasim"});
  expect_error(with(kSimulate, {"--attn-impl", "flash"}), kUsage, {"--attn-impl", "'flash'", "flash_attention_2"});
  expect_error(with(kSimulate, {"--lora-dropout", "much"}), kUsage, {"--lora-dropout", "a number", "'much'"});
  expect_error(with(kSimulate, {"--lora-dropout", "1"}), kUsage, {"--lora-dropout", "[0, 1)"});
  expect_error(with(kSimulate, {"--lora-dropout", "-0.1"}), kUsage, {"--lora-dropout", "between 0 and 1"});
  expect_error(with(kSimulate, {"--allocator", "cudaMalloc"}), kUsage, {"--allocator", "'cudaMalloc'", "expandable"});
  expect_error(with(kSimulate, {"--allocator", ""}), kUsage, {"--allocator", "''"});
  expect_error(with(kSimulate, {"--autocast", "yes"}), kUsage, {"--autocast must be true or false", "'yes'"});
}

TEST(StackFlagsTest, AnOptionTheStackDoesNotHaveIsRefusedNamingTheFlag) {
  expect_error(with(kSimulate, {"--stack", "lorasim", "--lora-dropout", "0.05"}), kUsage,
               {"--lora-dropout: the lorasim stack has no LoRA dropout", "--stack hf-peft"});
  expect_error(with(kSimulate, {"--stack", "lorasim", "--autocast", "true"}), kUsage,
               {"--autocast: the lorasim stack runs without autocast"});
  expect_error(with(kSimulate, {"--stack", "lorasim", "--attn-impl", "eager"}), kUsage,
               {"--attn-impl: the lorasim stack has one attention implementation"});
  // What the stack has is fine at its default value too.
  ok(with(kSimulate, {"--stack", "lorasim", "--autocast", "false", "--lora-dropout", "0"}));
}

TEST(StackFlagsTest, LiveValidateRunsLorasimsRunnerAndPointsHfUsersAtTheCallback) {
  expect_error({"validate", "--gpu", "h200", "--model", "tiny", "--stack", "hf-peft"}, kUsage,
               {"--stack hf-peft", "LibTorch runner", "LorasimCallback", "validate --measurements"});
}

TEST(StackFlagsTest, CalibrateDryRunPrintsThePlanSizedForTheGpu) {
  // No --out needed, nothing runs (no Python here is asked): the plan, shrunk to a T4's memory.
  const std::string t4 = ok({"calibrate", "--stack", "hf-peft", "--gpu", "t4", "--dry-run"});
  const std::string h200 = ok({"calibrate", "--stack", "hf-peft", "--gpu", "h200", "--dry-run"});
  EXPECT_NE(t4.find("sized for the NVIDIA Tesla T4"), std::string::npos) << t4;
  EXPECT_NE(h200.find("36 runs of the hf-peft stack"), std::string::npos) << h200;
  EXPECT_NE(h200.find("qwen3-1.7b L=4 s=512 b=16 a=1 default"), std::string::npos) << h200;
  // A 16-sequence run through Transformers' loss would not fit a T4 (the fused head's does).
  EXPECT_EQ(t4.find("b=16 a=1 default"), std::string::npos) << t4;
  expect_error({"calibrate", "--stack", "hf-peft", "--gpu", "t4"}, kUsage, {"--out FILE is required"});
}

TEST(StackFlagsTest, MeasurementFilesBringTheirOwnStack) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  write_file(runs,
             "model,seq_len,micro_batch,accumulation,step_time_s,stack,lora_dropout,loop\n"
             "qwen3-1.7b,512,1,16,4.36,hf-peft,0.05,trainer\nqwen3-1.7b,512,16,1,0.398,hf-peft,0.05,trainer\n"
             "qwen3-1.7b,512,16,1,0.398,lorasim,,\n");
  expect_error({"validate", "--measurements", runs.string(), "--gpu", "h200", "--stack", "lorasim"}, kUsage,
               {"--stack", "--measurements"});
  const json j = ok_json({"validate", "--measurements", runs.string(), "--gpu", "h200", "--format", "json"});
  ASSERT_EQ(j["groups"].size(), 2u);  // one workload, two stacks
  EXPECT_EQ(j["groups"][0]["stack"]["kind"], "hf-peft");
  EXPECT_EQ(j["groups"][0]["stack"]["lora_dropout"], 0.05);
  EXPECT_EQ(j["groups"][1]["stack"]["kind"], "lorasim");
  EXPECT_NE(ok({"validate", "--measurements", runs.string(), "--gpu", "h200"}).find("B=16 hf-peft dropout=0.05"),
            std::string::npos);
}

TEST(StackFlagsTest, FitTakesOneStackAndRecordsIt) {
  TempDir dir;
  const std::string header = "model,seq_len,micro_batch,accumulation,step_time_s,peak_reserved_bytes,stack\n";
  const std::string hf = "qwen3-1.7b,512,1,16,4.36,6612320256,hf-peft\nqwen3-1.7b,512,4,4,1.14,15780000000,hf-peft\n"
                         "qwen3-1.7b,512,16,1,0.398,52460000000,hf-peft\n";
  write_file(dir / "hf.csv", header + hf);
  write_file(dir / "mixed.csv", header + hf + "qwen3-1.7b,512,2,8,2.21,9670000000,lorasim\n");
  const fs::path out = dir / "hf.toml";
  const std::string text = ok({"fit", "--measurements", (dir / "hf.csv").string(), "--gpu", "h200", "--out", out.string()});
  EXPECT_NE(text.find("\nstack: hf-peft\n"), std::string::npos) << text;
  EXPECT_NE(read_file(out).find("stack = \"hf-peft\""), std::string::npos);
  expect_error({"fit", "--measurements", (dir / "mixed.csv").string(), "--gpu", "h200", "--out",
                (dir / "never.toml").string()},
               kUsage, {"lorasim stack", "hf-peft stack", "fit one stack at a time"});
  expect_error({"fit", "--measurements", (dir / "hf.csv").string(), "--stack", "lorasim", "--gpu", "h200", "--out",
                (dir / "never.toml").string()},
               kUsage, {"hf-peft stack", "--stack is lorasim"});
  EXPECT_FALSE(fs::exists(dir / "never.toml"));
}

}  // namespace
