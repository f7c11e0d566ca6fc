// What recommend and simulate say beside the figures (issue 29): the runner-up and the split
// refused for memory, "the split barely matters", one no-fit advice, and what came from a default
// or a --trainer preset -- the GPU, SFTConfig's checkpointing, the QLoRA recipe, the optimizer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::vector<std::string> kT4Sft = {"--gpu", "t4", "--model", "qwen3-1.7b", "--effective-batch", "16",
                                         "--seq-len", "2048", "--trainer", "sft"};

std::vector<std::string> cmd(const char* command, const std::vector<std::string>& args,
                             std::initializer_list<std::string> more = {}) {
  std::vector<std::string> all = {command};
  all.insert(all.end(), args.begin(), args.end());
  all.insert(all.end(), more);
  return all;
}

// simulate --trainer sft shows SFTConfig's checkpointed splits; recommend weighs both and picks
// 1x16 without. They agree once simulate says what the other setting gives, and recommend says why.
TEST(RecommendLinesTest, SftCheckpointingOnAT4IsExplainedOnBothSides) {
  const json rec = ok_json(cmd("recommend", kT4Sft, {"--format", "json"}));
  ASSERT_TRUE(rec["recommended"].is_object());
  EXPECT_EQ(rec["recommended"]["micro_batch"], 1);
  EXPECT_EQ(rec["recommended"]["grad_ckpt"], false);
  EXPECT_EQ(rec["recommended"]["runner_up"]["micro_batch"], 8);
  EXPECT_EQ(rec["recommended"]["runner_up"]["grad_ckpt"], true);
  EXPECT_EQ(rec["recommended"]["refused"]["grad_ckpt"], false);
  EXPECT_NE(rec["recommended"]["refused"]["why"].get<std::string>().find("usable"), std::string::npos);
  const std::string table = ok(cmd("recommend", kT4Sft));
  EXPECT_NE(table.find("\nrunner-up:   micro-batch 8 x accumulation 2 with gradient checkpointing: "), std::string::npos)
      << table;
  EXPECT_NE(table.find("\nrefused:     micro-batch 16 x accumulation 1 without gradient checkpointing: "),
            std::string::npos) << table;
  EXPECT_NE(table.find("SFTConfig turns gradient checkpointing on unless told"), std::string::npos) << table;
  const std::string sim = ok(cmd("simulate", kT4Sft));
  EXPECT_NE(sim.find("gradient checkpointing is on as SFTConfig sets it (--trainer sft); without it "
                     "(gradient_checkpointing=False) 1x16 takes "),
            std::string::npos) << sim;
}

TEST(RecommendLinesTest, SplitsWithinTheNoiseSayTheSplitBarelyMatters) {
  const std::string out =
      ok({"recommend", "--gpu", "h200", "--model", "qwen3-8b", "--effective-batch", "4", "--seq-len", "4096"});
  EXPECT_NE(out.find("every split that fits is within 5% of it: the split barely matters here"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("1.0x faster"), std::string::npos) << out;
  EXPECT_NE(out.find("\nrunner-up:   "), std::string::npos) << out;
}

TEST(RecommendLinesTest, NoFitAdviceNamesOnlyWhatWouldHelp) {
  // Checkpointing already on: not advised again; a smaller effective batch never is (1xB is a split).
  const std::vector<std::string> base = {"recommend", "--gpu", "t4", "--model", "qwen3-8b", "--effective-batch", "16",
                                         "--seq-len", "2048", "--memory-limit", "4GiB"};
  const std::string on = ok(with(base, {"--grad-ckpt", "true"}));
  EXPECT_NE(on.find("recommended: none (no split fits: try a shorter --seq-len"), std::string::npos) << on;
  EXPECT_EQ(on.find("--grad-ckpt"), std::string::npos) << on;
  const json off = ok_json(with(base, {"--grad-ckpt", "false", "--format", "json"}));
  ASSERT_TRUE(off["no_fit_advice"].is_array());
  EXPECT_EQ(off["no_fit_advice"].front(), "grad_ckpt");
  for (const json& note : off["notes"]) EXPECT_EQ(note.get<std::string>().find("smaller LoRA rank"), std::string::npos);
  const json both = ok_json(with(base, {"--format", "json"}));
  for (const json& key : both["no_fit_advice"]) EXPECT_NE(key, "grad_ckpt");
}

TEST(RecommendLinesTest, AMissingGpuIsSaidInOneLine) {
  const std::vector<std::string> base = {"recommend", "--model", "qwen3-1.7b", "--effective-batch", "16"};
  const json defaulted = ok_json(with(base, {"--format", "json"}));
  ASSERT_FALSE(defaulted["notes"].empty());
  EXPECT_EQ(defaulted["notes"][0].get<std::string>().rfind("no --gpu or --profile given: these are the NVIDIA H200", 0),
            0u) << defaulted["notes"];
  const json given = ok_json(with(base, {"--gpu", "h200", "--format", "json"}));  // alive through the loop
  for (const json& note : given["notes"])
    EXPECT_EQ(note.get<std::string>().find("no --gpu"), std::string::npos);
}

TEST(RecommendLinesTest, SftOnAQuantizedBaseSaysWhichRecipeAndHowToAskForTheOther) {
  const std::vector<std::string> base = {"recommend", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch",
                                         "16", "--seq-len", "2048", "--trainer", "sft", "--quant", "nf4"};
  const std::string loaded = ok(base);
  EXPECT_NE(loaded.find("--trainer sft assumes the quantized base reaches SFTTrainer as loaded, not through "
                        "peft.prepare_model_for_kbit_training"),
            std::string::npos) << loaded;
  EXPECT_NE(loaded.find("pass --kbit-prepare true: then 16x1 takes "), std::string::npos) << loaded;
  const std::string prepared = ok(with(base, {"--kbit-prepare", "true"}));
  EXPECT_EQ(prepared.find("--trainer sft assumes"), std::string::npos) << prepared;
  EXPECT_NE(prepared.find("(then peft.prepare_model_for_kbit_training(model))"), std::string::npos) << prepared;
}

TEST(RecommendLinesTest, TheDefaultOptimizerIsTransformers5s) {
  const std::vector<std::string> base = {"recommend", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch",
                                         "16", "--format", "json"};
  EXPECT_EQ(ok_json(with(base, {"--quant", "nf4"}))["workload"]["optim"], "adamw_torch_fused");
  const json fused = ok_json(with(base, {"--optim", "adamw_torch_fused"}));
  EXPECT_FALSE(fused["recommended"]["training_arguments"].contains("optim"));  // the default: nothing to set
  const json plain = ok_json(with(base, {"--optim", "adamw_torch"}));
  EXPECT_EQ(plain["recommended"]["training_arguments"]["optim"], "adamw_torch");
}

TEST(RecommendLinesTest, LengthsSayTheDataNotTheCap) {
  TempDir dir;
  std::string csv = "length,count\n";
  for (int n = 40; n <= 408; n += 8) csv += std::to_string(n) + ",40\n";
  write_file(dir / "lengths.csv", csv);
  // SFTConfig's max_length 1024 is a cap the data never reaches: the header says the data's lengths.
  const std::string out = ok({"recommend", "--gpu", "t4", "--model", "qwen3-1.7b", "--effective-batch", "16",
                              "--lengths", (dir / "lengths.csv").string(), "--trainer", "sft", "--memory-limit",
                              "12GiB", "--grad-ckpt", "false"});
  const std::string workload = out.substr(out.find("workload:"), out.find('\n', out.find("workload:")) - out.find("workload:"));
  EXPECT_EQ(workload.find("seq "), std::string::npos) << workload;
  EXPECT_NE(out.find(" to 408 tokens"), std::string::npos) << out;
  // The allocator's cache of many shapes grows only where the GPU has room: no sentence that
  // promises more memory than the limit.
  EXPECT_EQ(out.find("the allocator holds up to"), std::string::npos) << out;
  EXPECT_NE(out.find("worst micro-batch needs "), std::string::npos) << out;
}

}  // namespace

// SFTTrainer's defaults on long-tailed lengths under a 9 GiB cap (issue 28's sft9 cell): 16x1 with
// checkpointing ran there, and 70% of its micro-batches have the worst one's width, so the
// allocator needs little beyond the fixed-shape worst case at the limit. It is recommended.
TEST(RecommendLinesTest, TheSft9CellsFastestSplitFits) {
  const json j = ok_json(cmd("recommend", {"--gpu", "h100-sxm", "--model", "qwen3-1.7b", "--effective-batch", "16",
                                           "--trainer", "sft", "--memory-limit", "9.5GiB", "--lengths",
                                           std::string(LORASIM_SOURCE_DIR) + "/bench/hf/lengths/longtail.csv",
                                           "--format", "json"}));
  EXPECT_EQ(j["recommended"]["micro_batch"], 16) << j["recommended"].dump();
  EXPECT_EQ(j["recommended"]["grad_ckpt"], true) << j["recommended"].dump();
}

// The same cell under a 0.2 GiB smaller cap: 16x1 with checkpointing needs 2% more than the
// usable memory. It is named as a near miss with what it would gain; 16x1 without checkpointing,
// far over, is not.
TEST(RecommendLinesTest, AFasterSplitJustOverTheLimitIsANearMiss) {
  const std::vector<std::string> sft9 = {"--gpu", "h100-sxm", "--model", "qwen3-1.7b", "--effective-batch", "16",
                                         "--trainer", "sft", "--memory-limit", "9.3GiB", "--lengths",
                                         std::string(LORASIM_SOURCE_DIR) + "/bench/hf/lengths/longtail.csv"};
  const json j = ok_json(cmd("recommend", sft9, {"--format", "json"}));
  ASSERT_EQ(j["recommended"]["micro_batch"], 8) << j["recommended"].dump();
  const json& near = j["recommended"]["near_miss"];
  ASSERT_TRUE(near.is_object()) << j["recommended"].dump();
  EXPECT_EQ(near["micro_batch"], 16);
  EXPECT_EQ(near["grad_ckpt"], true);
  const double usable = j["usable_memory_bytes"].get<double>();
  EXPECT_GT(near["needed_bytes"].get<double>(), usable);
  EXPECT_LE(near["needed_bytes"].get<double>(), 1.10 * usable);
  EXPECT_LT(near["step_time_s"].get<double>(), j["recommended"]["step_time_s"].get<double>());
  const std::string table = ok(cmd("recommend", sft9));
  EXPECT_NE(table.find("\nnear miss:   micro-batch 16 x accumulation 1 with gradient checkpointing would be "),
            std::string::npos)
      << table;
  // With room to spare nothing faster is refused, and no near miss is named.
  const json roomy = ok_json(cmd("recommend", kT4Sft, {"--format", "json"}));
  EXPECT_FALSE(roomy["recommended"].contains("near_miss")) << roomy["recommended"].dump();
}
