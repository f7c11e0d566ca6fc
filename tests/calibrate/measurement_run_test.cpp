// The run columns (device, processes, what the model saw, the config's hash): read, refused
// with their place, written back; config files named relative to the rows file, checked by hash.
#include "calibrate/measurement_run.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "calibrate/content_hash.h"
#include "calibrate/measurement_io.h"
#include "model/error.h"
#include "tests/calibrate/parse_error.h"

namespace lorasim::calib {
namespace {

namespace fs = std::filesystem;

const std::string kHeader = "model,seq_len,micro_batch,step_time_s";

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::path(::testing::TempDir()) / "lorasim-run-cols-XXXXXX").string();
    if (::mkdtemp(p.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string config(int layers) {
  return "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": " +
         std::to_string(layers) +
         ", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 256}\n";
}

// Runs `f` with the working directory at `dir`, restoring it after.
template <class F>
void in_directory(const fs::path& dir, F f) {
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  try {
    f();
  } catch (...) {
    fs::current_path(old);
    throw;
  }
  fs::current_path(old);
}

TEST(ContentHashTest, MatchesTheStandardsTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(MeasurementRunTest, ReadsEveryRunColumnFromCsvAndJsonl) {
  const auto csv = parse_measurements(
      kHeader + ",device,device_memory_bytes,processes,collation,padded_lengths,real_tokens\n"
                "tiny,1024,8,0.5,NVIDIA H200,150754820096,1,longest,512:3;1024:13,4100.5\n",
      "csv", "m.csv");
  ASSERT_EQ(csv.size(), 1u);
  const Measurement& m = csv[0];
  EXPECT_EQ(m.device, "NVIDIA H200");
  EXPECT_EQ(m.device_memory_bytes, 150754820096.0);
  EXPECT_EQ(m.processes, 1);
  EXPECT_EQ(m.collation, "longest");
  EXPECT_EQ(m.padded_lengths, (model::PaddedWidths{{512, 3}, {1024, 13}}));
  EXPECT_EQ(m.real_tokens, 4100.5);
  const auto jsonl = parse_measurements(
      "{\"model\": \"tiny\", \"seq_len\": 1000, \"micro_batch\": 1, \"step_time_s\": 0.5, \"device\": \"cpu\", "
      "\"processes\": 2, \"collation\": \"packed\", \"padded_lengths\": \"1000:8\", \"real_tokens\": 1000}\n",
      "jsonl", "m.jsonl");
  EXPECT_EQ(jsonl[0].device, "cpu");
  EXPECT_EQ(jsonl[0].processes, 2);
  EXPECT_EQ(jsonl[0].collation, "packed");
  EXPECT_EQ(jsonl[0].padded_lengths, (model::PaddedWidths{{1000, 8}}));
  // Left out: not recorded, one process.
  const auto old = parse_measurements(kHeader + "\ntiny,128,2,0.5\n", "csv", "m.csv");
  EXPECT_EQ(old[0].device, "");
  EXPECT_EQ(old[0].processes, 1);
  EXPECT_TRUE(old[0].padded_lengths.empty());
  EXPECT_FALSE(measured(old[0].real_tokens));
}

TEST(MeasurementRunTest, MalformedRunColumnsAreRefusedWithTheirPlace) {
  auto err = [](const std::string& cols, const std::string& cells) {
    const std::string empty(static_cast<size_t>(std::count(cols.begin(), cols.end(), ',')) + 1, ',');
    return parse_error(kHeader + "," + cols + "\ntiny,128,2,0.5" + empty + "\ntiny,1024,8,0.5," + cells + "\n", "csv");
  };
  // The first row is fine; the second is refused, at line 3.
  EXPECT_EQ(parse_error(kHeader + ",collation\ntiny,128,2,0.5,\ntiny,1024,8,0.5,sorted\n", "csv"),
            "m.csv:3: column collation: expected fixed, longest, multiple:N, max_length, packed or padding-free, "
            "got 'sorted'");
  EXPECT_EQ(err("collation", "multiple:0"), "m.csv:3: column collation: expected multiple:N's N >= 1, got '0'");
  EXPECT_EQ(err("padded_lengths", "1024:13;512:3"),
            "m.csv:3: column padded_lengths: padded lengths: width 512 after 1024: list each width once, ascending");
  EXPECT_EQ(err("padded_lengths", "512:3;512:2;1024:1"),
            "m.csv:3: column padded_lengths: padded lengths: width 512 after 512: list each width once, ascending");
  EXPECT_EQ(err("padded_lengths", "512:0;1024:1"),
            "m.csv:3: column padded_lengths: padded lengths: '512:0' is not width:count (two positive whole numbers, e.g. "
            "1024:13)");
  EXPECT_EQ(err("padded_lengths", "-512:1;1024:1"),
            "m.csv:3: column padded_lengths: padded lengths: '-512:1' is not width:count (two positive whole numbers, e.g. "
            "1024:13)");
  EXPECT_EQ(err("padded_lengths", "512;1024:1"),
            "m.csv:3: column padded_lengths: padded lengths: '512' is not width:count (two positive whole numbers, e.g. "
            "1024:13)");
  EXPECT_EQ(err("padded_lengths", "512:3;1000:13"),
            "m.csv:3: column padded_lengths: the largest width, 1000, must be the row's seq_len, 1024 (seq_len is "
            "the largest padded width the model saw)");
  // kHeader's rows have accumulation 1: one micro-batch per step can meet one new shape at most.
  EXPECT_EQ(err("new_shapes_per_step", "2"),
            "m.csv:3: column new_shapes_per_step: 2 new shapes per step is more than the step's 1 micro-batches");
  EXPECT_EQ(err("new_shapes_per_step", "-0.5"),
            "m.csv:3: column new_shapes_per_step: expected a non-negative number, got '-0.5'");
  EXPECT_EQ(err("collation,padded_lengths", "fixed,512:3;1024:1"),
            "m.csv:3: column padded_lengths: collation fixed has one width, seq_len, but the row lists 2");
  EXPECT_EQ(err("real_tokens", "8193"),
            "m.csv:3: column real_tokens: 8193 real tokens per micro-batch is more than micro_batch x seq_len = 8192: "
            "no micro-batch holds that many");
  EXPECT_EQ(err("real_tokens", "0"), "m.csv:3: column real_tokens: expected a positive number, got '0'");
  EXPECT_EQ(err("processes", "0"), "m.csv:3: column processes: expected a process count >= 1, got '0'");
  EXPECT_EQ(err("processes", "1.5"),
            "m.csv:3: column processes: expected a process count as a whole number >= 1, got '1.5'");
  EXPECT_EQ(err("device_memory_bytes", "1.5"),
            "m.csv:3: column device_memory_bytes: expected a whole number of bytes, got '1.5'");
  EXPECT_EQ(err("model_config_sha256", "abc"),
            "m.csv:3: column model_config_sha256: expected 64 lowercase hex digits (the SHA-256 of the config "
            "file), got 'abc'");
  EXPECT_EQ(err("model_config_sha256", std::string(64, 'a')),
            "m.csv:3: column model_config_sha256: the row's model 'tiny' is a preset, not a config file: drop the "
            "hash or name the config file");
}

TEST(MeasurementRunTest, TheWriterKeepsTheRunColumns) {
  TempDir dir;
  const auto rows = parse_measurements(
      kHeader + ",device,device_memory_bytes,processes,collation,padded_lengths,real_tokens\n"
                "tiny,1024,8,0.5,Tesla T4,15828320256,1,multiple:64,512:3;1024:13,4100.5\n",
      "csv", "m.csv");
  write_measurements_csv(rows, (dir.path / "out.csv").string());
  const auto back = load_measurements((dir.path / "out.csv").string());
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].device, "Tesla T4");
  EXPECT_EQ(back[0].device_memory_bytes, 15828320256.0);
  EXPECT_EQ(back[0].collation, "multiple:64");
  EXPECT_EQ(back[0].padded_lengths, rows[0].padded_lengths);
  EXPECT_EQ(back[0].real_tokens, 4100.5);
  // A device name with a comma stays one cell.
  std::vector<Measurement> odd = rows;
  odd[0].device = "Vendor X, rev 2";
  write_measurements_csv(odd, (dir.path / "odd.csv").string());
  EXPECT_EQ(load_measurements((dir.path / "odd.csv").string())[0].device, "Vendor X, rev 2");
}

TEST(MeasurementRunTest, ARelativeConfigIsTheRowsFilesAndMovesWithIt) {
  TempDir dir;
  const std::string two = config(2), six = config(6);
  const std::string h2 = sha256_hex(two), h6 = sha256_hex(six);
  // Two runs, two configs of one file name in two folders: each row reads its own.
  write(dir.path / "a" / "runs.configs" / "model.json", two);
  write(dir.path / "b" / "runs.configs" / "model.json", six);
  const std::string row = kHeader + ",model_config_sha256\nruns.configs/model.json,128,2,0.5,";
  write(dir.path / "a" / "runs.csv", row + h2 + "\n");
  write(dir.path / "b" / "runs.csv", row + h6 + "\n");
  in_directory(dir.path / "b", [&] {  // the working directory has the other model.json
    EXPECT_EQ(load_measurements((dir.path / "a" / "runs.csv").string())[0].workload.arch.num_layers, 2);
    EXPECT_EQ(load_measurements("runs.csv")[0].workload.arch.num_layers, 6);
  });
  // Moved with its folder, the file still reads.
  fs::rename(dir.path / "a", dir.path / "moved");
  EXPECT_EQ(load_measurements((dir.path / "moved" / "runs.csv").string())[0].workload.arch.num_layers, 2);
}

TEST(MeasurementRunTest, AConfigThatChangedSinceTheRunIsRefused) {
  TempDir dir;
  write(dir.path / "runs.configs" / "model.json", config(6));
  const std::string two = sha256_hex(config(2));
  write(dir.path / "runs.csv", kHeader + ",model_config_sha256\nruns.configs/model.json,128,2,0.5," + two + "\n");
  const std::string path = (dir.path / "runs.csv").string();
  try {
    load_measurements(path);
    FAIL() << "a hash mismatch was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: column model_config_sha256: the config file '" +
                                         (dir.path / "runs.configs" / "model.json").string() + "' hashes to " +
                                         sha256_hex(config(6)) + ", not the row's " + two +
                                         ": it changed since the run (restore the file the run used, or remove the "
                                         "hash)");
  }
}

TEST(MeasurementRunTest, AMissingConfigSaysWhereItWasLookedFor) {
  TempDir dir;
  write(dir.path / "runs.csv", kHeader + "\nruns.configs/gone.json,128,2,0.5\n");
  const std::string path = (dir.path / "runs.csv").string();
  try {
    load_measurements(path);
    FAIL() << "a missing config was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: column model: config file 'runs.configs/gone.json' not found beside "
                                            "the rows (in " + dir.path.string() +
                                            ") nor in the working directory: keep the rows file and its configs "
                                            "together, or give the config's path");
  }
}

TEST(MeasurementRunTest, ARowWithoutAHashStillFindsAConfigOfTheWorkingDirectory) {
  // Files written before configs were stored beside the rows name them from where the run was.
  TempDir dir;
  write(dir.path / "configs" / "m.json", config(3));
  write(dir.path / "rows" / "runs.csv", kHeader + "\nconfigs/m.json,128,2,0.5\n");
  in_directory(dir.path, [&] {
    const auto rows = load_measurements("rows/runs.csv");
    EXPECT_EQ(rows[0].workload.arch.num_layers, 3);
    EXPECT_EQ(rows[0].workload.arch.name, "configs/m.json");
  });
}

}  // namespace
}  // namespace lorasim::calib

namespace lorasim::calib {
namespace {

TEST(MeasurementRunTest, SavedRowsCarryTheirConfigBesideThemByHash) {
  TempDir dir;
  write(dir.path / "elsewhere" / "model.json", config(2));
  write(dir.path / "other" / "model.json", config(6));
  const auto rows = parse_measurements(kHeader + "\n" + (dir.path / "elsewhere" / "model.json").string() +
                                           ",128,2,0.5\n" + (dir.path / "other" / "model.json").string() + ",128,2,0.5\n",
                                       "csv", "m.csv");
  const fs::path out = dir.path / "saved" / "runs.csv";
  fs::create_directories(out.parent_path());
  write_measurements_csv(rows, out.string());
  // Two configs of one name: two files, each named by its hash, relative to the rows.
  const std::string h2 = sha256_hex(config(2)), h6 = sha256_hex(config(6));
  EXPECT_TRUE(fs::exists(dir.path / "saved" / "runs.configs" / (h2.substr(0, 16) + ".json")));
  EXPECT_TRUE(fs::exists(dir.path / "saved" / "runs.configs" / (h6.substr(0, 16) + ".json")));
  std::ifstream in(out);
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  EXPECT_EQ(first.rfind("runs.configs/" + h2.substr(0, 16) + ".json,2,", 0), 0u) << first;
  // The hash ends the run's columns; the quantized-base columns follow (a float base, AdamW).
  const std::string quant_cells = ",none,true,false,adamw_torch_fused,fp32";
  EXPECT_EQ(first.substr(first.size() - quant_cells.size() - 64), h2 + quant_cells);
  // The originals can go, and the folder can move: the rows still read, each its own config.
  fs::remove_all(dir.path / "elsewhere");
  fs::remove_all(dir.path / "other");
  fs::rename(dir.path / "saved", dir.path / "moved");
  const auto back = load_measurements((dir.path / "moved" / "runs.csv").string());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].workload.arch.num_layers, 2);
  EXPECT_EQ(back[1].workload.arch.num_layers, 6);
  EXPECT_EQ(back[1].model_config_sha256, h6);
}

}  // namespace
}  // namespace lorasim::calib
