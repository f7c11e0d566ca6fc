// End-to-end: validate --measurements and fit take the rows' device (docs/measurements.md),
// refuse a profile of another device unless told, and fit refuses runs of several processes.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

const std::string kHeader = "model,seq_len,micro_batch,accumulation,step_time_s,precision,device,device_memory_bytes\n";

// Three splits of tiny at 64 tokens on `device` (the memory column empty when `memory` is).
std::string rows(const std::string& device, const std::string& memory = "", const std::string& precision = "fp32") {
  std::string out = kHeader;
  for (const char* split : {"1,4,2.0", "2,2,1.2", "4,1,0.9"})
    out += "tiny,64," + std::string(split) + "," + precision + "," + device + "," + memory + "\n";
  return out;
}

std::string validate_profile(const fs::path& file, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"validate", "--measurements", file.string(), "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return ok_json(args)["profile"]["name"].get<std::string>();
}

TEST(RowDeviceCliTest, ValidateTakesTheEmbeddedProfileOfTheRowsDevice) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> devices = {
      {"NVIDIA H200", "h200"}, {"Tesla T4", "t4"}, {"NVIDIA A100-SXM4-80GB", "a100-80gb"},
      {"NVIDIA A100-SXM4-40GB", "a100-40gb"}, {"NVIDIA L4", "l4"}, {"NVIDIA A10G", "a10g"}};
  for (const auto& [device, profile] : devices) {
    write_file(dir / "runs.csv", rows(device, "", "fp16"));
    EXPECT_EQ(validate_profile(dir / "runs.csv"), profile) << device;
  }
  // The memory a row records picks among the A100s too.
  write_file(dir / "runs.csv", rows("NVIDIA A100-SXM4", "85899345920", "fp16"));
  EXPECT_EQ(validate_profile(dir / "runs.csv"), "a100-80gb");
  // Rows from before the column name no device: --gpu's default, as before.
  write_file(dir / "old.csv", "model,seq_len,micro_batch,step_time_s\ntiny,64,2,0.5\n");
  EXPECT_EQ(validate_profile(dir / "old.csv"), "h200");
}

TEST(RowDeviceCliTest, ACpuRowNeverBecomesAnH200One) {
  TempDir dir;
  write_file(dir / "cpu.csv", rows("cpu", "68719476736"));
  const std::string file = (dir / "cpu.csv").string();
  expect_error({"validate", "--measurements", file}, kUsage,
               {"the measurements ran on cpu, which no embedded profile describes", "--profile FILE"});
  expect_error({"validate", "--measurements", file, "--gpu", "h200"}, kUsage,
               {"the measurements ran on cpu but --gpu h200 describes the NVIDIA H200", "--allow-device-mismatch"});
  expect_error({"fit", "--measurements", file, "--gpu", "h200", "--out", (dir / "p.toml").string()}, kUsage,
               {"the measurements ran on cpu but --gpu h200", "--allow-device-mismatch"});
  EXPECT_FALSE(fs::exists(dir / "p.toml"));
  EXPECT_EQ(validate_profile(dir / "cpu.csv", {"--gpu", "h200", "--allow-device-mismatch"}), "h200");
  // fit refines lorasim's CPU base, synchronous ("sum"), as `calibrate --device cpu` does.
  ok({"fit", "--measurements", file, "--out", (dir / "cpu.toml").string()});
  const std::string cpu = read_file(dir / "cpu.toml");
  EXPECT_NE(cpu.find("name = \"cpu\""), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("overlap = \"sum\""), std::string::npos) << cpu;
  // ... and that profile then validates them.
  EXPECT_EQ(validate_profile(dir / "cpu.csv", {"--profile", (dir / "cpu.toml").string()}), "cpu");
}

TEST(RowDeviceCliTest, ADeviceWithoutAProfileIsRefusedSayingWhatToPass) {
  TempDir dir;
  write_file(dir / "runs.csv", rows("NVIDIA GeForce RTX 4090", "", "bf16"));
  expect_error({"validate", "--measurements", (dir / "runs.csv").string()}, kUsage,
               {"ran on NVIDIA GeForce RTX 4090, which no embedded profile describes", "--profile FILE",
                "--allow-device-mismatch"});
  expect_error({"fit", "--measurements", (dir / "runs.csv").string(), "--out", (dir / "p.toml").string()}, kUsage,
               {"ran on NVIDIA GeForce RTX 4090, which no embedded profile describes"});
  write_file(dir / "cpu.csv", rows("cpu"));
  expect_error({"fit", "--measurements", (dir / "cpu.csv").string(), "--out", (dir / "p.toml").string()}, kUsage,
               {"record no device_memory_bytes"});
}

TEST(RowDeviceCliTest, RowsOfTwoDevicesOrSeveralProcessesAreRefused) {
  TempDir dir;
  write_file(dir / "two.csv", rows("NVIDIA H200") + "tiny,64,8,1,0.5,fp32,Tesla T4,\n");
  expect_error({"validate", "--measurements", (dir / "two.csv").string()}, kUsage,
               {"ran on two devices, NVIDIA H200", "and Tesla T4"});
  // fit still refuses data-parallel rows; validate predicts them on as many GPUs (data_parallel_cli_test.cpp).
  write_file(dir / "ddp.csv", "model,seq_len,micro_batch,accumulation,step_time_s,processes\ntiny,64,4,2,0.5,2\n");
  expect_error({"fit", "--measurements", (dir / "ddp.csv").string(), "--gpu", "h200", "--out", (dir / "p.toml").string()},
               kUsage, {"ran on 2 processes (data parallel): `lorasim fit` fits one GPU's terms from runs of one process",
                        "give runs of one process"});
}

TEST(RowDeviceCliTest, FitKeepsTheBaseProfilesOverlapUnlessTold) {
  TempDir dir;
  write_file(dir / "cpu.csv", rows("cpu", "68719476736"));
  const std::string file = (dir / "cpu.csv").string();
  ok({"fit", "--measurements", file, "--out", (dir / "base.toml").string()});
  // Refitting onto a "sum" profile keeps "sum" (it used to become "max", the flag's default).
  ok({"fit", "--measurements", file, "--profile", (dir / "base.toml").string(), "--out", (dir / "again.toml").string()});
  EXPECT_NE(read_file(dir / "again.toml").find("overlap = \"sum\""), std::string::npos);
  ok({"fit", "--measurements", file, "--profile", (dir / "base.toml").string(), "--overlap", "max", "--out",
      (dir / "max.toml").string()});
  EXPECT_NE(read_file(dir / "max.toml").find("overlap = \"max\""), std::string::npos);
}

TEST(RowDeviceCliTest, AllowDeviceMismatchBelongsToMeasurements) {
  expect_error({"validate", "--allow-device-mismatch", "--model", "tiny"}, kUsage,
               {"--allow-device-mismatch compares a --measurements file"});
}

}  // namespace
