// End-to-end tests of the lightning stack on the command line: --trainer lightning predicts with
// hf-peft's terms until the profile holds the loop's own, says the split in Lightning's terms,
// and `calibrate --stack lightning` plans the loop's runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

json recommend_json(std::initializer_list<std::string> more) {
  std::vector<std::string> v = {"recommend", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16",
                                "--grad-ckpt", "false"};
  v.insert(v.end(), more);
  v.insert(v.end(), {"--format", "json"});
  return ok_json(v);
}

TEST(LightningCliTest, TrainerLightningIsTheLightningStackWithHfPeftsFiguresUntilCalibrated) {
  const json pl = recommend_json({"--trainer", "lightning"});
  const json hf = recommend_json({"--trainer", "trainer"});
  EXPECT_EQ(pl["workload"]["stack"]["kind"], "lightning");
  EXPECT_EQ(pl["workload"]["stack"]["autocast"], true);
  // The profile has no [stack.lightning]: every time and count is the Trainer's. The worst case
  // takes the larger share, since those memory rows were fitted under a Trainer's loop.
  ASSERT_EQ(pl["splits"].size(), hf["splits"].size());
  for (size_t i = 0; i < pl["splits"].size(); ++i) {
    EXPECT_EQ(pl["splits"][i]["step_time_s"], hf["splits"][i]["step_time_s"]);
    EXPECT_EQ(pl["splits"][i]["peak_reserved_bytes"], hf["splits"][i]["peak_reserved_bytes"]);
    EXPECT_GT(pl["splits"][i]["worst_reserved_bytes"], hf["splits"][i]["worst_reserved_bytes"]);
  }
  const std::string settings = pl["recommended"]["program_settings"];
  const std::string b = std::to_string(pl["recommended"]["micro_batch"].get<int>());
  const std::string a = std::to_string(pl["recommended"]["accumulation"].get<int>());
  EXPECT_NE(settings.find("batch_size=" + b + " "), std::string::npos) << settings;
  EXPECT_NE(settings.find("accumulate_grad_batches=" + a + ", precision=\"bf16-mixed\""), std::string::npos) << settings;
  EXPECT_FALSE(hf["recommended"].contains("program_settings"));
}

TEST(LightningCliTest, TablesSayTheSplitInLightningsTermsAndTheNoteNamesItsCalibration) {
  const std::string out = ok({"recommend", "--gpu", "h100-sxm", "--model", "qwen3-1.7b", "--effective-batch", "16",
                              "--trainer", "lightning", "--autocast", "false"});
  EXPECT_NE(out.find("Lightning: batch_size="), std::string::npos) << out;
  EXPECT_NE(out.find("precision=\"bf16-true\""), std::string::npos) << out;
  EXPECT_EQ(out.find("HF TrainingArguments"), std::string::npos) << out;
  EXPECT_NE(out.find("run `lorasim calibrate --stack lightning` on this machine"), std::string::npos) << out;
}

TEST(LightningCliTest, OptionsItDoesNotHaveAreRefused) {
  expect_error({"simulate", "--stack", "lightning", "--fused-lm-head", "true"}, kUsage,
               {"--fused-lm-head: the lightning stack's loss is the module's own"});
  expect_error({"calibrate", "--stack", "lightning", "--gpu", "h100-sxm", "--quant", "nf4", "--dry-run"}, kUsage,
               {"--quant: the lightning stack reads a quantized base's terms from hf-peft's"});
}

TEST(LightningCliTest, CalibrateDryRunListsTheLoopsRuns) {
  const RunResult r = run_lorasim({"calibrate", "--stack", "lightning", "--gpu", "h100-sxm", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("11 runs of the lightning stack on cuda"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("qwen3-1.7b L=28 s=512 b=4 a=1"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;  // the H100's hf-peft terms are calibrated
  // On a prior the loop's fit would carry hf-peft's prior error: said before anything runs.
  const RunResult prior = run_lorasim({"calibrate", "--stack", "lightning", "--gpu", "a10g", "--dry-run"});
  ASSERT_EQ(prior.exit_code, 0) << prior.err;
  EXPECT_NE(prior.err.find("warning: the profile's hf-peft terms (a10g) are priors"), std::string::npos) << prior.err;
  EXPECT_NE(prior.err.find("run `lorasim calibrate --stack hf-peft` first"), std::string::npos) << prior.err;
}

}  // namespace
