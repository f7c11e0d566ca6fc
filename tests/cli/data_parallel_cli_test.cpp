// End-to-end: --gpus and --link on simulate, recommend and validate (docs/data-parallel.md):
// one GPU prints what no flag prints, N GPUs split B / N per GPU and say how to launch them, bad
// values are one line, and validate predicts rows of several processes on that many GPUs.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::vector<std::string> kSimulate = {"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--lora-rank", "16",
                                            "--effective-batch", "16"};

TEST(DataParallelCliTest, OneGpuIsTheOutputWithoutTheFlag) {
  for (const std::string command : {"simulate", "recommend"}) {
    std::vector<std::string> base = kSimulate;
    base[0] = command;
    for (const std::string format : {"json", "table", "csv"}) {
      const std::vector<std::string> plain = with(base, {"--format", format});
      EXPECT_EQ(ok(with(plain, {"--gpus", "1"})), ok(plain)) << command << " " << format;
    }
  }
}

// One GPU has no link to choose (issue 29: it was accepted and ignored).
TEST(DataParallelCliTest, ALinkWithOneGpuIsRefused) {
  expect_error(with(kSimulate, {"--gpus", "1", "--link", "pcie"}), kUsage, {"--link", "--gpus N"});
}

TEST(DataParallelCliTest, TwoGpusSplitSixteenAsEightPerGpuAndSayHowToLaunch) {
  const json j = ok_json(with(kSimulate, {"--gpus", "2", "--format", "json"}));
  ASSERT_EQ(j["splits"].size(), 4u);
  for (const json& s : j["splits"]) {
    EXPECT_EQ(s["micro_batch"].get<int64_t>() * s["accumulation"].get<int64_t>(), 8) << s;
    EXPECT_EQ(s["gpus"], 2);
    EXPECT_GT(s["allreduce_time_s"].get<double>(), 0);
    EXPECT_LE(s["allreduce_exposed_s"].get<double>(), s["allreduce_time_s"].get<double>());
  }
  EXPECT_EQ(j["gpus"], 2);
  EXPECT_EQ(j["data_parallel"]["gradient_bytes"], 69730304);  // 17,432,576 adapter parameters in fp32
  EXPECT_EQ(j["data_parallel"]["buckets"], 3);
  EXPECT_EQ(j["data_parallel"]["link"], "nvlink");
  EXPECT_EQ(j["data_parallel"]["allreduce_gbps"], 315.0);
  EXPECT_EQ(j["recommended"]["launch"]["torchrun"], "torchrun --nproc_per_node 2");
  EXPECT_EQ(j["recommended"]["launch"]["accelerate"], "accelerate launch --num_processes 2");
  EXPECT_EQ(j["recommended"]["training_arguments"]["ddp_find_unused_parameters"], false);
  EXPECT_NE(j["recommended"]["hf_args"].get<std::string>().find(" --ddp_find_unused_parameters false"), std::string::npos);
  const json pcie = ok_json(with(kSimulate, {"--gpus", "2", "--link", "pcie", "--format", "json"}));
  EXPECT_EQ(pcie["data_parallel"]["allreduce_gbps"], 22.4);  // the PCIe prior, not the H200's NVLink

  const std::string table = ok(with(kSimulate, {"--gpus", "2"}));
  EXPECT_NE(table.find("gpus:      2 data-parallel (DDP), 8 sequences per GPU per step; 66.50 MiB of gradients "
                       "all-reduced in 3 buckets over nvlink (315.0 GB/s bus)"),
            std::string::npos)
      << table;
  // recommend weighs both checkpointing settings and says the same all-reduce.
  std::vector<std::string> rec = with(kSimulate, {"--gpus", "2"});
  rec[0] = "recommend";
  EXPECT_NE(ok(rec).find("66.50 MiB of gradients all-reduced in 3 buckets over nvlink (315.0 GB/s bus)"), std::string::npos);
  EXPECT_NE(table.find("\nlaunch: torchrun --nproc_per_node 2 train.py ... (or accelerate launch --num_processes 2 "
                       "train.py ...); per_device_train_batch_size is per GPU\n"),
            std::string::npos)
      << table;
}

TEST(DataParallelCliTest, BadGpuCountsAndLinksAreOneLine) {
  const std::vector<std::string> b15 = {"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "15"};
  const std::vector<std::string> b128 = {"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "128"};
  expect_error(with(b15, {"--gpus", "2"}), kUsage,
               {"--gpus: effective batch 15 does not divide among 2 GPUs: use a GPU count that divides it (1, 3, 5, 15) "
                "or an effective batch that is a multiple of 2"});
  expect_error(with(kSimulate, {"--gpus", "0"}), kUsage, {"--gpus"});
  expect_error(with(b128, {"--gpus", "128"}), kUsage,
               {"--gpus: the number of GPUs must be in [1, 64]"});
  expect_error(with(kSimulate, {"--gpus", "2", "--link", "ethernet"}), kUsage,
               {"--link: unknown link 'ethernet': expected nvlink or pcie"});
  expect_error(with(kSimulate, {"--fsdp"}), kUsage, {"error: --fsdp shards the frozen weights across GPUs: give --gpus 2 or more"});
  expect_error(with(kSimulate, {"--fsdp", "--gpus", "2", "--quant", "nf4", "--grad-ckpt"}), kUsage,
               {"--fsdp: FSDP of a quantized base", "is not modelled yet"});
  expect_error({"validate", "--gpu", "h200", "--model", "tiny", "--gpus", "2"}, kUsage,
               {"--gpus 2: live validate trains one process"});
}

TEST(DataParallelCliTest, LengthsOnTwoGpusPredictTheSlowestAndOneGpuIsUnchanged) {
  TempDir dir;
  write_file(dir / "lengths.csv", "length,count\n100,3\n400,1\n");
  const std::vector<std::string> base = with(kSimulate, {"--lengths", (dir / "lengths.csv").string()});
  for (const std::string command : {"simulate", "recommend"}) {
    std::vector<std::string> b = base;
    b[0] = command;
    for (const std::string format : {"json", "table", "csv"})
      EXPECT_EQ(ok(with(b, {"--gpus", "1", "--format", format})), ok(with(b, {"--format", format}))) << command << format;
  }
  const json j = ok_json(with(base, {"--gpus", "2", "--format", "json"}));
  EXPECT_EQ(j["gpus"], 2);
  for (const json& s : j["splits"]) EXPECT_EQ(s["micro_batch"].get<int64_t>() * s["accumulation"].get<int64_t>(), 8) << s;
  std::vector<std::string> rec = with(base, {"--gpus", "2"});
  rec[0] = "recommend";
  const std::string table = ok(rec);
  EXPECT_NE(table.find("gpus:      2 data-parallel (DDP)"), std::string::npos) << table;
  EXPECT_NE(table.find("\nlaunch: torchrun --nproc_per_node 2"), std::string::npos) << table;
  EXPECT_NE(table.find("the step waits for the slowest"), std::string::npos) << table;
}

TEST(DataParallelCliTest, FsdpPrintsItsTrainingArgumentsAndAccelerateConfig) {
  std::vector<std::string> rec = with(kSimulate, {"--gpus", "2", "--fsdp"});
  rec[0] = "recommend";
  const std::string table = ok(rec);
  EXPECT_NE(table.find("gpus:      2 FSDP FULL_SHARD, 8 sequences per GPU per step"), std::string::npos) << table;
  EXPECT_NE(table.find("--fsdp \"full_shard auto_wrap\" --fsdp_config fsdp_config.json"), std::string::npos) << table;
  EXPECT_EQ(table.find("--ddp_find_unused_parameters"), std::string::npos) << table;
  EXPECT_NE(table.find("\"transformer_layer_cls_to_wrap\":[\"Qwen3DecoderLayer\"]"), std::string::npos) << table;
  EXPECT_NE(table.find("\"use_orig_params\":true"), std::string::npos) << table;
  EXPECT_NE(table.find("accelerate config: distributed_type: FSDP, fsdp_sharding_strategy: FULL_SHARD"), std::string::npos);
  const json j = ok_json(with(kSimulate, {"--gpus", "2", "--fsdp", "--format", "json"}));
  EXPECT_EQ(j["data_parallel"]["fsdp"]["sharded_weights_bytes"], 1720574976);
  EXPECT_EQ(j["data_parallel"]["fsdp"]["memory_delta_bytes"], -1031376896);
  EXPECT_EQ(j["recommended"]["training_arguments"]["fsdp"], "full_shard auto_wrap");
  EXPECT_EQ(j["recommended"]["training_arguments"]["fsdp_config"]["use_orig_params"], true);
  for (const json& s : j["splits"]) EXPECT_GT(s["fsdp_exposed_s"].get<double>(), 0) << s;
}

// The callback's row of a two-process run: micro_batch and accumulation are each process's.
TEST(DataParallelCliTest, ValidatePredictsRowsOfTwoProcessesOnTwoGpus) {
  TempDir dir;
  write_file(dir / "ddp.csv",
             "model,seq_len,micro_batch,accumulation,step_time_s,processes\ntiny,64,4,2,0.5,2\ntiny,64,8,1,0.4,2\n");
  const json v = ok_json({"validate", "--measurements", (dir / "ddp.csv").string(), "--gpu", "h200", "--format", "json"});
  ASSERT_EQ(v["groups"].size(), 1u);
  EXPECT_NE(v["groups"][0]["workload"].get<std::string>().find("gpus=2"), std::string::npos);
  const json s = ok_json({"simulate", "--gpu", "h200", "--model", "tiny", "--seq-len", "64", "--stack", "lorasim",
                          "--gpus", "2", "--effective-batch", "16", "--format", "json"});
  const json& rows = v["groups"][0]["splits"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["micro_batch"], 4);
  EXPECT_EQ(rows[0]["predicted_step_time_s"], s["splits"][2]["step_time_s"]);  // 4x2 on each of 2 GPUs
  EXPECT_EQ(rows[1]["predicted_step_time_s"], s["splits"][3]["step_time_s"]);  // 8x1
  // --gpus, where given, must be the rows' own count.
  expect_error({"validate", "--measurements", (dir / "ddp.csv").string(), "--gpu", "h200", "--gpus", "4"}, kUsage,
               {"--gpus 4: the run", "ran on 2 processes"});
  EXPECT_EQ(ok({"validate", "--measurements", (dir / "ddp.csv").string(), "--gpu", "h200", "--gpus", "2", "--format", "json"}),
            ok({"validate", "--measurements", (dir / "ddp.csv").string(), "--gpu", "h200", "--format", "json"}));
}

// Rows of two processes predicted under --fsdp, and from a lengths file: simulate's figures for
// the same flags on two GPUs.
TEST(DataParallelCliTest, ValidatePredictsTwoProcessRowsUnderFsdpAndFromLengths) {
  TempDir dir;
  write_file(dir / "ddp.csv", "model,seq_len,micro_batch,accumulation,step_time_s,processes\ntiny,64,4,2,0.5,2\n");
  write_file(dir / "lengths.csv", "length,count\n16,3\n64,1\n");
  const std::string rows = (dir / "ddp.csv").string(), lengths = (dir / "lengths.csv").string();
  const std::vector<std::string> sim = {"simulate", "--gpu", "h200", "--model", "tiny", "--seq-len", "64", "--stack",
                                        "lorasim", "--gpus", "2", "--effective-batch", "16", "--format", "json"};
  const json v = ok_json({"validate", "--measurements", rows, "--gpu", "h200", "--fsdp", "--format", "json"});
  const json s = ok_json(with(sim, {"--fsdp"}));
  EXPECT_EQ(v["groups"][0]["splits"][0]["predicted_step_time_s"], s["splits"][2]["step_time_s"]);  // 4x2
  const json vl = ok_json({"validate", "--measurements", rows, "--gpu", "h200", "--lengths", lengths, "--max-length", "64",
                           "--format", "json"});
  std::vector<std::string> lsim = sim;
  lsim.erase(lsim.begin() + 5, lsim.begin() + 7);  // --seq-len 64: the file gives the lengths
  const json sl = ok_json(with(lsim, {"--lengths", lengths, "--max-length", "64"}));
  EXPECT_EQ(vl["groups"][0]["splits"][0]["predicted_step_time_s"], sl["splits"][2]["step_time_s"]);
  EXPECT_NE(vl["groups"][0]["splits"][0]["predicted_step_time_s"], v["groups"][0]["splits"][0]["predicted_step_time_s"]);
  expect_error({"validate", "--gpu", "h200", "--model", "tiny", "--fsdp"}, kUsage, {"--fsdp: live validate trains one process"});
}

}  // namespace
