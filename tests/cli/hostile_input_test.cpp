// Hostile inputs (issue 29): files nested, sized or shaped to crash or exhaust lorasim, inputs
// read silently as something else, and messages that printed the input whole. Each test failed
// before its fix.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::vector<std::string> kH200 = {"--gpu", "h200", "--model", "qwen3-1.7b", "--seq-len", "512",
                                        "--effective-batch", "16"};

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

/// `script` run by sh with the binary as "$L"; stderr and the exit code as run_lorasim gives them.
RunResult run_shell(const std::string& script) {
  TempDir dir;
  const fs::path out = dir / "out", err = dir / "err";
  const std::string cmd = "L=" + shell_quote(LORASIM_BIN) + "; " + script + " >" + shell_quote(out.string()) +
                          " 2>" + shell_quote(err.string());
  const int status = std::system(("sh -c " + shell_quote(cmd)).c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// --- crashes -------------------------------------------------------------------------------

TEST(HostileInputCliTest, AConfigNestedDeepIsRefusedEvenUnderAnUnknownKey) {
  TempDir dir;
  // The value nests 100,000 deep under a key lorasim does not read; the message printed it
  // recursively and overflowed the stack (SIGSEGV).
  write_file(dir / "config.json", replace_once(kQwen3_1_7bConfig, "\"use_cache\": true", "\"x\": " + nested(100000)));
  expect_error({"simulate", "--model-config", (dir / "config.json").string()}, kConfig,
               {"config.json", "nested more than 64 levels deep"});
  // So deep under a key it reads, too.
  write_file(dir / "config.json", replace_once(kQwen3_1_7bConfig, "\"vocab_size\": 151936", "\"vocab_size\": " + nested(100000)));
  expect_error({"simulate", "--model-config", (dir / "config.json").string()}, kConfig, {"nested more than 64"});
  // A real config's three levels still read.
  write_file(dir / "config.json", replace_once(kQwen3_1_7bConfig, "\"use_cache\": true", "\"x\": " + nested(3)));
  ok({"simulate", "--model-config", (dir / "config.json").string()});
}

TEST(HostileInputCliTest, AMeasurementRowNestedDeepIsRefused) {
  TempDir dir;
  write_file(dir / "rows.jsonl", "{\"model\": \"qwen3-1.7b\", \"seq_len\": 512, \"micro_batch\": 1, \"accumulation\": 16, "
                                 "\"step_time_s\": 4.3, \"lora_targets\": " + nested(100000) + "}\n");
  expect_error({"validate", "--gpu", "h200", "--measurements", (dir / "rows.jsonl").string()}, kConfig,
               {"rows.jsonl:1", "nested more than 64 levels deep"});
}

// --- unbounded reads -----------------------------------------------------------------------

TEST(HostileInputCliTest, EndlessInputsStopAtTheLimitTheyName) {
  TempDir dir;
  // Each grew to gigabytes and ended in std::bad_alloc.
  expect_error({"simulate", "--lengths", "/dev/zero"}, kConfig, {"/dev/zero:1", "a line longer than 1 MiB"});
  expect_error({"simulate", "--profile", "/dev/zero"}, kConfig, {"/dev/zero", "larger than 16 MiB", "a profile"});
  expect_error({"simulate", "--model-config", "/dev/zero"}, kConfig, {"/dev/zero", "larger than 16 MiB", "config.json"});
  fs::create_symlink("/dev/zero", dir / "zero.csv");
  fs::create_symlink("/dev/zero", dir / "zero.jsonl");
  expect_error({"validate", "--gpu", "h200", "--measurements", (dir / "zero.csv").string()}, kConfig,
               {"zero.csv:1", "a line longer than 1 MiB"});
  expect_error({"fit", "--gpu", "h200", "--measurements", (dir / "zero.jsonl").string(), "--out",
                (dir / "p.toml").string()},
               kConfig, {"longer than 1 MiB"});
  expect_error(with({"recommend"}, {"--gpu", "h200", "--measured", (dir / "zero.csv").string()}), kConfig,
               {"zero.csv:1", "longer than 1 MiB"});
}

TEST(HostileInputCliTest, AFileOfCommentsIsStreamedNotHeld) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: an address-space limit cannot apply";
#endif
  TempDir dir;
  // 64 MiB of comment lines and one row, under a 100 MB address-space limit: read whole (and
  // copied once more) it took twice its size and died in std::bad_alloc.
  {
    std::ofstream f(dir / "rows.csv", std::ios::binary);
    f << "model,seq_len,micro_batch,accumulation,step_time_s,peak_reserved_bytes,stack\n";
    const std::string comments = std::string(1 << 20, '#').replace((1 << 20) - 1, 1, "\n");
    for (int i = 0; i < 64; ++i) f << comments;
    f << "qwen3-1.7b,512,1,16,4.36,6612320256,hf-peft\n";
  }
  const RunResult r = run_shell("ulimit -v 100000; \"$L\" validate --gpu h200 --measurements " +
                                shell_quote((dir / "rows.csv").string()) + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"micro_batch\": 1"), std::string::npos) << r.out.substr(0, 500);
}

// --- silent wrong results ------------------------------------------------------------------

const json& split_of(const json& j, int b, bool grad_ckpt) {
  for (const json& s : j["splits"])
    if (s["micro_batch"] == b && s["grad_ckpt"] == grad_ckpt) return s;
  static const json none;
  ADD_FAILURE() << "no split " << b << " grad_ckpt " << grad_ckpt;
  return none;
}

TEST(HostileInputCliTest, MeasuredRowsStandForTheirOwnCheckpointingSetting) {
  TempDir dir;
  // Every split out of memory without checkpointing, and one checkpointed run.
  std::string rows = "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes,grad_ckpt,stack\n";
  for (int b : {1, 2, 4, 8, 16}) rows += "qwen3-1.7b,512," + std::to_string(b) + "," + std::to_string(16 / b) + ",true,,,false,hf-peft\n";
  rows += "qwen3-1.7b,512,16,1,false,0.5,22548578304,true,hf-peft\n";
  write_file(dir / "rows.csv", rows);
  std::vector<std::string> args = {"recommend", "--format", "json", "--measured", (dir / "rows.csv").string()};
  args.insert(args.end(), kH200.begin(), kH200.end());
  const json j = ok_json(args);
  // The out-of-memory rows were applied to the checkpointed splits too, and the answer was none.
  EXPECT_TRUE(split_of(j, 16, false)["measured_oom"]);
  EXPECT_FALSE(split_of(j, 8, true)["measured"]) << split_of(j, 8, true).dump(2);
  // The checkpointed row was dropped as another workload.
  EXPECT_TRUE(split_of(j, 16, true)["measured"]);
  EXPECT_EQ(split_of(j, 16, true)["step_time_s"], 0.5);
  ASSERT_TRUE(j["recommended"].is_object()) << j.dump(2).substr(0, 2000);
  EXPECT_EQ(j["recommended"]["micro_batch"], 16);
  EXPECT_EQ(j["recommended"]["grad_ckpt"], true);
}

TEST(HostileInputCliTest, MeasuredRowsOfAnotherDeviceAreRefused) {
  TempDir dir;
  write_file(dir / "rows.csv", "model,seq_len,micro_batch,accumulation,step_time_s,device,stack,grad_ckpt\n"
                               "qwen3-1.7b,512,4,4,9.5,Tesla T4,hf-peft,false\n");
  // validate and fit refused them; --measured put a T4's time in place of the H200's.
  expect_error(with({"recommend", "--grad-ckpt", "false", "--measured", (dir / "rows.csv").string()},
                    {"--gpu", "h200", "--model", "qwen3-1.7b", "--seq-len", "512", "--effective-batch", "16"}),
               kUsage, {"Tesla T4", "NVIDIA H200"});
}

TEST(HostileInputCliTest, AModelConfigThroughAPipeKeepsItsQuantizationConfig) {
  TempDir dir;
  const std::string q = replace_once(kQwen3_1_7bConfig, "\"use_cache\": true",
                                     "\"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": "
                                     "true, \"bnb_4bit_quant_type\": \"nf4\"}, \"use_cache\": true");
  write_file(dir / "q.json", q);
  const std::string args = " simulate --gpu h200 --effective-batch 4 --format json --model-config ";
  const RunResult disk = run_shell("\"$L\"" + args + shell_quote((dir / "q.json").string()));
  const RunResult pipe = run_shell("cat " + shell_quote((dir / "q.json").string()) + " | \"$L\"" + args + "/dev/stdin");
  ASSERT_EQ(disk.exit_code, 0) << disk.err;
  ASSERT_EQ(pipe.exit_code, 0) << pipe.err;
  const json a = json::parse(disk.out), b = json::parse(pipe.out);
  EXPECT_EQ(a["workload"]["quant"], "nf4") << a["workload"].dump(2);
  EXPECT_EQ(b["workload"]["quant"], "nf4") << b["workload"].dump(2);
  EXPECT_EQ(a["splits"], b["splits"]);
}

TEST(HostileInputCliTest, OneFileGivenTwiceToFitIsRefused) {
  TempDir dir;
  write_file(dir / "runs.csv", "model,seq_len,micro_batch,accumulation,step_time_s,peak_reserved_bytes\n"
                               "qwen3-1.7b,512,1,16,4.36,6612320256\n");
  fs::create_symlink(dir / "runs.csv", dir / "alias.csv");
  expect_error({"fit", "--gpu", "h200", "--measurements", (dir / "runs.csv").string(), "--measurements",
                (dir / "alias.csv").string(), "--out", (dir / "p.toml").string()},
               kUsage, {"same file", "count twice"});
  EXPECT_FALSE(fs::exists(dir / "p.toml"));
}

TEST(HostileInputCliTest, FlagsThatCannotApplyAreRefused) {
  expect_error({"simulate", "--gpu", "t4", "--gpus", "2", "--link", "nvlink"}, kUsage, {"--link nvlink", "no NVLink"});
  expect_error({"simulate", "--gpu", "h200", "--link", "pcie"}, kUsage, {"--link", "--gpus"});
  expect_error({"simulate", "--attn-impl", "flash_attention_2", "--precision", "fp32"}, kUsage,
               {"--attn-impl", "fp32"});
  expect_error({"simulate", "--lora-targets", "qkv_proj"}, kUsage, {"--lora-targets qkv_proj", "no fused", "q,k,v"});
  expect_error({"simulate", "--lora-targets", "q,gate_up_proj"}, kUsage, {"gate_up_proj", "gate,up"});
  expect_error({"simulate", "--kbit-prepare", "false"}, kUsage, {"--kbit-prepare false", "--quant"});
  // What applies still runs.
  ok({"simulate", "--gpu", "t4", "--gpus", "2", "--link", "pcie"});
  ok({"simulate", "--attn-impl", "flash_attention_2", "--precision", "bf16"});
  ok({"simulate", "--quant", "nf4", "--kbit-prepare", "false"});
}

TEST(HostileInputCliTest, NumbersAreDecimalEverywhere) {
  // --lora-alpha 0x10 was 16, --effective-batch 0x10 refused; --memory-limit 0x10GiB was 16 GiB.
  expect_error({"simulate", "--lora-alpha", "0x10"}, kUsage, {"--lora-alpha", "'0x10'"});
  expect_error({"simulate", "--memory-limit", "0x10GiB"}, kUsage, {"--memory-limit", "'0x10GiB'"});
  expect_error({"simulate", "--effective-batch", "0x10"}, kUsage, {"--effective-batch", "'0x10'"});
}

// --- messages ------------------------------------------------------------------------------

TEST(HostileInputCliTest, TheOffendingInputIsQuotedShortAndEscaped) {
  TempDir dir;
  // Half a megabyte of one line was printed whole.
  write_file(dir / "long.txt", std::string(500000, 'x') + "\n");
  RunResult r = run_lorasim({"simulate", "--lengths", (dir / "long.txt").string()});
  EXPECT_EQ(r.exit_code, kConfig);
  EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("(500000 bytes)"), std::string::npos) << r.err.substr(0, 400);
  // Control bytes reached the terminal raw, and a NUL cut the message where what() stops.
  write_file(dir / "ctl.txt", std::string("12\x1b[2J\0tail\n", 12));
  r = run_lorasim({"simulate", "--lengths", (dir / "ctl.txt").string()});
  EXPECT_EQ(r.exit_code, kConfig);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'12\\x1b[2J\\x00tail'"), std::string::npos) << r.err;
  // An unknown option of 100 KB, too.
  r = run_lorasim({"simulate", "--" + std::string(100000, 'y')});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
}

TEST(HostileInputCliTest, APaddingMultipleBeyondTheDataIsBlamedOnPadding) {
  TempDir dir;
  write_file(dir / "l.txt", "100\n200\n");
  expect_error({"simulate", "--lengths", (dir / "l.txt").string(), "--padding", "multiple:99999999999"}, kUsage,
               {"--padding multiple:99999999999", "at most 200"});
  ok({"simulate", "--lengths", (dir / "l.txt").string(), "--padding", "multiple:64"});
}

TEST(HostileInputCliTest, AMemoryLimitBelowAMebibyteSaysWhatWasGiven) {
  // It read "the memory limit of 0 MiB".
  expect_error({"simulate", "--memory-limit", "1KiB"}, kUsage, {"--memory-limit 1KiB", "1024 bytes", "below 1 MiB"});
}

TEST(HostileInputCliTest, NanAndASubnormalGetOneMessage) {
  std::vector<std::string> messages;
  for (const std::string v : {"nan", "NaN", "4.9e-324", "inf"}) {
    const RunResult r = run_lorasim({"simulate", "--lora-alpha", v});
    EXPECT_EQ(r.exit_code, kUsage);
    std::string m = r.err;
    m.replace(m.find("'" + v + "'"), v.size() + 2, "V");
    messages.push_back(m);
  }
  for (const std::string& m : messages) EXPECT_EQ(m, "error: --lora-alpha must be a number between 1e-09 and 1e+09, got V\n");
}

TEST(HostileInputCliTest, MisspelledOptionsGetADidYouMean) {
  expect_error({"simulate", "--efective-batch", "8"}, kUsage, {"'--efective-batch'", "did you mean '--effective-batch'?"});
  expect_error({"recommend", "--lora_rank", "8"}, kUsage, {"did you mean '--lora-rank'?"});
  expect_error({"fit", "--measurement", "x.csv"}, kUsage, {"did you mean '--measurements'?"});
}

}  // namespace
