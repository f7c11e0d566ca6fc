// The option table end to end: --help prints each default from its typed value, and a library
// error about a quantity is reported under the flag that set it -- and only where a flag did.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

TEST(OptionTableTest, HelpPrintsTheTypedDefaults) {
  const std::string help = ok({"simulate", "--help"});
  for (const char* line : {"--seq-len arg (=512)", "--lora-rank arg (=16)", "--lora-alpha arg (=32)",
                           "--safety-margin arg (=0)", "--effective-batch arg (=16)", "--gpu arg (=h200)"})
    EXPECT_NE(help.find(line), std::string::npos) << line << "\n" << help;
  EXPECT_NE(ok({"fit", "--help"}).find("--fit-mode arg (=auto)"), std::string::npos);
}

TEST(OptionTableTest, ALibraryErrorIsReportedUnderItsFlag) {
  // The library says "LoRA rank"; the command line says which flag gave it.
  expect_error({"simulate", "--lora-rank", "5000"}, kUsage, {"--lora-rank: LoRA rank 5000 exceeds the hidden size"});
  expect_error({"simulate", "--model", "qwen3-1.8b"}, kUsage, {"--model: unknown model", "lorasim models"});
  expect_error({"simulate", "--gpu", "h10"}, kUsage, {"--gpu: unknown GPU 'h10'", "lorasim profiles"});
}

TEST(OptionTableTest, AValueFromAFileIsNotBlamedOnTheFlagOfItsName) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  write_file(runs, "model,seq_len,micro_batch,accumulation,oom,step_time_s,lora_rank\n"
                   "qwen3-1.7b,512,1,4,false,2.15,5000\n");
  const RunResult r = run_lorasim({"validate", "--gpu", "h200", "--measurements", runs.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.find("--lora-rank"), std::string::npos) << r.err;
}

}  // namespace
