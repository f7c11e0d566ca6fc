// End-to-end tests of the `lorasim` binary: each runs it as a user would, capturing stdout,
// stderr and the exit code. CliTest covers output that scripts and users rely on (formats,
// the issue's example commands, help); CliErrorTest covers the contract of every error:
// a non-zero distinct exit code, one "error: ..." line naming the bad value and what is
// allowed, and nothing on stdout.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_lorasim.h"

#ifdef LORASIM_HAVE_LIBPNG
#include <png.h>
#endif

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lorasim::testing;

constexpr int kUsage = 2;   // cli/args.h: bad flag or value
constexpr int kConfig = 3;  // cli/args.h: bad file

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << p;
}

/// Runs a command that must succeed quietly and returns its stdout.
std::string ok(const std::vector<std::string>& args) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, 0) << describe(args, r);
  EXPECT_EQ(r.err, "") << describe(args, r);
  return r.out;
}

json ok_json(const std::vector<std::string>& args) {
  const std::string out = ok(args);
  try {
    return json::parse(out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "): " << out.substr(0, 500);
    return json();
  }
}

/// The error contract: exit `code`, nothing on stdout, one line "error: ..." on stderr that
/// contains every one of `needles`.
void expect_error(const std::vector<std::string>& args, int code,
                  std::initializer_list<std::string> needles) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, code) << describe(args, r);
  EXPECT_EQ(r.out, "") << describe(args, r);
  const std::vector<std::string> lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << describe(args, r);
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << describe(args, r);
  for (const auto& n : needles) EXPECT_NE(lines[0].find(n), std::string::npos) << "wants '" << n << "'\n" << describe(args, r);
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t b = 1; b <= n; ++b)
    if (n % b == 0) d.push_back(b);
  return d;
}

void expect_splits_json(const json& j, int64_t effective_batch) {
  ASSERT_TRUE(j.contains("splits") && j["splits"].is_array()) << j.dump().substr(0, 500);
  const std::vector<int64_t> want = divisors(effective_batch);
  ASSERT_EQ(j["splits"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const json& s = j["splits"][i];
    for (const char* key : {"micro_batch", "accumulation", "step_time_s", "peak_allocated_bytes",
                            "peak_reserved_bytes", "fits"})
      EXPECT_TRUE(s.contains(key)) << "split " << i << " lacks " << key;
    EXPECT_EQ(s["micro_batch"].get<int64_t>(), want[i]);
    EXPECT_EQ(s["micro_batch"].get<int64_t>() * s["accumulation"].get<int64_t>(), effective_batch);
    EXPECT_GT(s["step_time_s"].get<double>(), 0);
    EXPECT_GT(s["peak_allocated_bytes"].get<int64_t>(), 0);
    EXPECT_GE(s["peak_reserved_bytes"].get<int64_t>(), s["peak_allocated_bytes"].get<int64_t>());
    EXPECT_TRUE(s["fits"].is_boolean());
  }
  ASSERT_TRUE(j.contains("recommended"));
}

/// The fields of Qwen/Qwen3-1.7B's config.json on the Hugging Face Hub.
const char* kQwen3_1_7bConfig = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 6144,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
)";

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// 1-based line of the first occurrence of `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

std::string builtin_h200_toml() {
  return read_file(fs::path(LORASIM_SOURCE_DIR) / "hwprofiles" / "h200.toml");
}

std::vector<std::string> with(std::vector<std::string> base, std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}

// ---------------------------------------------------------------------------------------------

TEST(CliTest, SimulateTableShowsTheHeaderEverySplitAndTheHfFlags) {
  const std::string out = ok(with({"simulate"}, {"--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16"}));
  for (const char* header : {"model:", "workload:", "gpu:", "batch:", "memory:"})
    EXPECT_NE(out.find(header), std::string::npos) << header << " missing in\n" << out;
  for (const char* column : {"micro", "accum", "step", "peak reserved", "fits", "rank"})
    EXPECT_NE(out.find(column), std::string::npos) << column;
  EXPECT_NE(out.find("HF TrainingArguments: --per_device_train_batch_size"), std::string::npos) << out;
  EXPECT_NE(out.find("--gradient_accumulation_steps"), std::string::npos) << out;
}

TEST(CliTest, RecommendTablePrintsTheHfFlags) {
  const std::string out = ok(with({"recommend"}, {"--gpu", "l4", "--model", "qwen3-0.6b", "--effective-batch", "8"}));
  EXPECT_NE(out.find("gpu:"), std::string::npos) << out;
  EXPECT_NE(out.find("recommended: micro-batch"), std::string::npos) << out;
  EXPECT_NE(out.find("HF TrainingArguments: --per_device_train_batch_size"), std::string::npos) << out;
}

TEST(CliTest, RecommendTableSaysNoneWhenNothingFits) {
  const std::string out = ok(with({"recommend"}, {"--effective-batch", "8", "--memory-limit", "1GiB"}));
  EXPECT_NE(out.find("recommended: none"), std::string::npos) << out;
  EXPECT_EQ(out.find("HF TrainingArguments"), std::string::npos) << out;
}

TEST(CliTest, CsvHasTheHeaderAndOneRowPerDivisor) {
  for (const char* command : {"simulate", "recommend"}) {
    SCOPED_TRACE(command);
    const std::vector<std::string> lines =
        lines_of(ok(with({command}, {"--gpu", "a100-80gb", "--effective-batch", "24", "--format", "csv"})));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0].rfind("micro_batch,accumulation,step_time_s,", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find("peak_allocated_bytes,peak_reserved_bytes,fits"), std::string::npos) << lines[0];
    const std::vector<int64_t> want = divisors(24);
    ASSERT_EQ(lines.size(), want.size() + 1);
    for (size_t i = 0; i < want.size(); ++i) {
      long long b = 0, a = 0;
      ASSERT_EQ(std::sscanf(lines[i + 1].c_str(), "%lld,%lld,", &b, &a), 2) << lines[i + 1];
      EXPECT_EQ(b, want[i]);
      EXPECT_EQ(b * a, 24);
    }
  }
}

TEST(CliTest, JsonHasEverySplitAndTheRecommendation) {
  for (const char* command : {"simulate", "recommend"}) {
    SCOPED_TRACE(command);
    const json j = ok_json(with({command}, {"--gpu", "h100-sxm", "--effective-batch", "32", "--format", "json"}));
    expect_splits_json(j, 32);
    ASSERT_TRUE(j["recommended"].is_object()) << j.dump().substr(0, 500);
    const int64_t b = j["recommended"]["micro_batch"].get<int64_t>();
    const int64_t a = j["recommended"]["accumulation"].get<int64_t>();
    EXPECT_EQ(b * a, 32);
    // The recommended split is the fastest that fits.
    for (const auto& s : j["splits"]) {
      if (s["fits"].get<bool>()) {
        EXPECT_GE(s["step_time_s"].get<double>(), j["recommended"]["step_time_s"].get<double>());
      }
    }
  }
}

TEST(CliTest, JsonRecommendationIsNullWhenNothingFits) {
  for (const char* command : {"simulate", "recommend"}) {
    SCOPED_TRACE(command);
    const json j = ok_json(with({command}, {"--effective-batch", "8", "--memory-limit", "1GiB", "--format", "json"}));
    expect_splits_json(j, 8);
    EXPECT_TRUE(j["recommended"].is_null()) << j["recommended"].dump();
    for (const auto& s : j["splits"]) EXPECT_FALSE(s["fits"].get<bool>());
  }
}

TEST(CliTest, IssueExampleRecommendOnT4Succeeds) {
  const std::string out =
      ok({"recommend", "--gpu", "t4", "--model", "qwen3-1.7b", "--effective-batch", "4", "--seq-len", "512"});
  EXPECT_NE(out.find("HF TrainingArguments: --per_device_train_batch_size"), std::string::npos) << out;
  // The T4 has no bf16: "auto" precision must pick fp16 there.
  EXPECT_NE(out.find("fp16"), std::string::npos) << out;
}

TEST(CliTest, IssueExampleSimulateQwen3_8bWithGradCkptAsJsonSucceeds) {
  const json j = ok_json({"simulate", "--gpu", "h200", "--model", "qwen3-8b", "--effective-batch", "64", "--seq-len",
                          "2048", "--grad-ckpt", "--format", "json"});
  expect_splits_json(j, 64);
  EXPECT_EQ(j["workload"]["model"], "qwen3-8b");
  EXPECT_EQ(j["workload"]["grad_ckpt"], true);
  EXPECT_EQ(j["workload"]["seq_len"], 2048);
  EXPECT_TRUE(j["recommended"].is_object());
}

TEST(CliTest, IssueExampleModelConfigMatchesThePreset) {
  TempDir dir;
  const fs::path config = dir / "config.json";
  write_file(config, kQwen3_1_7bConfig);
  const std::vector<std::string> rest = {"--gpu", "a100-80gb", "--effective-batch", "32", "--seq-len", "1024",
                                         "--lora-rank", "64", "--lora-targets", "q,k,v,o"};
  std::vector<std::string> issue_example = {"simulate", "--model-config", config.string()};
  issue_example.insert(issue_example.end(), rest.begin(), rest.end());
  const std::string table = ok(issue_example);
  EXPECT_NE(table.find("HF TrainingArguments"), std::string::npos) << table;

  std::vector<std::string> from_config = {"simulate", "--model-config", config.string(), "--format", "json"};
  std::vector<std::string> from_preset = {"simulate", "--model", "qwen3-1.7b", "--format", "json"};
  from_config.insert(from_config.end(), rest.begin(), rest.end());
  from_preset.insert(from_preset.end(), rest.begin(), rest.end());
  const json c = ok_json(from_config), p = ok_json(from_preset);
  expect_splits_json(c, 32);
  EXPECT_EQ(c["workload"]["base_params"], p["workload"]["base_params"]);
  EXPECT_EQ(c["workload"]["trainable_params"], p["workload"]["trainable_params"]);
  EXPECT_EQ(c["splits"], p["splits"]);
}

TEST(CliTest, ProfilesListsEveryBuiltinInEveryFormat) {
  const std::string table = ok({"profiles"});
  for (const char* name : {"t4", "l4", "a10g", "a100-40gb", "a100-80gb", "h100-sxm", "h200"})
    EXPECT_NE(table.find(name), std::string::npos) << name;
  EXPECT_NE(table.find("prior"), std::string::npos);

  const std::vector<std::string> csv = lines_of(ok({"profiles", "--format", "csv"}));
  ASSERT_EQ(csv.size(), 8u);
  EXPECT_EQ(csv[0].rfind("name,", 0), 0u);

  const json j = ok_json({"profiles", "--format", "json"});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 7u);
  for (const auto& p : j) {
    EXPECT_TRUE(p.contains("name"));
    EXPECT_GT(p["memory_bytes"].get<int64_t>(), 0);
  }
}

TEST(CliTest, ModelsListsThePresetsInEveryFormat) {
  const std::string table = ok({"models"});
  for (const char* name : {"qwen3-1.7b", "qwen3-8b"}) EXPECT_NE(table.find(name), std::string::npos) << name;

  const std::vector<std::string> csv = lines_of(ok({"models", "--format", "csv"}));
  ASSERT_GT(csv.size(), 2u);
  EXPECT_EQ(csv[0].rfind("name,base_params,", 0), 0u);

  const json j = ok_json({"models", "--format", "json"});
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), csv.size() - 1);
  for (const auto& m : j) EXPECT_GT(m["base_params"].get<int64_t>(), 0);
}

TEST(CliTest, HelpOfEverySubcommandShowsExamples) {
  for (const char* command : {"simulate", "recommend", "profiles", "models"}) {
    for (const char* flag : {"--help", "-h"}) {
      SCOPED_TRACE(std::string(command) + " " + flag);
      const std::string out = ok({command, flag});
      EXPECT_NE(out.find("usage: lorasim " + std::string(command)), std::string::npos) << out;
      EXPECT_NE(out.find("examples"), std::string::npos) << out;
    }
  }
  EXPECT_NE(ok({"--help"}).find("examples"), std::string::npos);
}

TEST(CliTest, PriorProfileSaysSo) {
  const std::string table = ok(with({"simulate"}, {"--gpu", "l4", "--effective-batch", "4"}));
  EXPECT_NE(table.find("datasheet prior"), std::string::npos) << table;
  const json j = ok_json(with({"recommend"}, {"--gpu", "l4", "--effective-batch", "4", "--format", "json"}));
  EXPECT_EQ(j["gpu"]["calibrated"], false);
  ASSERT_FALSE(j["notes"].empty());
  EXPECT_NE(j["notes"][0].get<std::string>().find("datasheet prior"), std::string::npos) << j["notes"].dump();
}

TEST(CliTest, ProfileFileGivesTheSamePredictionsAsTheBuiltin) {
  TempDir dir;
  const fs::path file = dir / "my-h200.toml";
  write_file(file, builtin_h200_toml());
  const std::string table = ok({"simulate", "--profile", file.string(), "--effective-batch", "16"});
  EXPECT_NE(table.find(file.string()), std::string::npos) << "the table should name the profile file\n" << table;
  const json from_file = ok_json({"simulate", "--profile", file.string(), "--effective-batch", "16", "--format", "json"});
  const json builtin = ok_json({"simulate", "--gpu", "h200", "--effective-batch", "16", "--format", "json"});
  expect_splits_json(from_file, 16);
  EXPECT_EQ(from_file["splits"], builtin["splits"]);
  EXPECT_EQ(from_file["recommended"], builtin["recommended"]);
}

/// The distinct colours of a PNG and its share of pixels that are not white; empty when it
/// cannot be read.
struct PngColours {
  std::set<uint32_t> colours;
  double inked_fraction = 0;
};

PngColours png_colours(const fs::path& file) {
  PngColours out;
#ifdef LORASIM_HAVE_LIBPNG
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, file.c_str())) return out;
  image.format = PNG_FORMAT_RGBA;
  std::vector<png_byte> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) return out;
  size_t inked = 0;
  for (size_t i = 0; i + 3 < pixels.size(); i += 4) {
    const uint32_t rgba = static_cast<uint32_t>(pixels[i]) << 24 | static_cast<uint32_t>(pixels[i + 1]) << 16 |
                          static_cast<uint32_t>(pixels[i + 2]) << 8 | pixels[i + 3];
    out.colours.insert(rgba);
    inked += rgba != 0xffffffffu;
  }
  out.inked_fraction = static_cast<double>(inked) / static_cast<double>(pixels.size() / 4);
#endif
  return out;
}

TEST(CliTest, SimulatePlotRendersToANonBlankPng) {
#ifndef LORASIM_HAVE_LIBPNG
  GTEST_SKIP() << "built without libpng (libpng-dev, scripts/install-deps.sh): cannot decode the rendered PNG";
#endif
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "rsvg-convert not found (Debian package librsvg2-bin, scripts/install-deps.sh)";
  TempDir dir;
  const fs::path svg = dir / "splits.svg", png = dir / "splits.png";
  const std::string table =
      ok({"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16", "--plot", svg.string()});
  EXPECT_NE(table.find("HF TrainingArguments"), std::string::npos) << "--plot adds to the table, not replaces it";
  const std::string text = read_file(svg);
  for (const char* needle : {"qwen3-1.7b", "seq len 512", "H200", "1 x 16", "16 x 1", ">recommended<", "limit ",
                             "usable "})
    EXPECT_NE(text.find(needle), std::string::npos) << needle;

  const std::string render = "rsvg-convert -f png -o " + shell_quote(png.string()) + " " + shell_quote(svg.string());
  ASSERT_EQ(std::system(render.c_str()), 0) << render;
  const PngColours c = png_colours(png);
  // Bars, text, grid, the limit lines, the recommended band: many colours and a fair share of ink.
  EXPECT_GE(c.colours.size(), 8u);
  EXPECT_GT(c.inked_fraction, 0.03);
  EXPECT_LT(c.inked_fraction, 0.9);
}

TEST(CliTest, PlotWithJsonKeepsStdoutJson) {
  TempDir dir;
  const fs::path svg = dir / "splits.svg";
  const json j = ok_json({"simulate", "--gpu", "t4", "--effective-batch", "8", "--format", "json", "--plot", svg.string()});
  expect_splits_json(j, 8);
  EXPECT_EQ(read_file(svg).rfind("<?xml", 0), 0u);
}

TEST(CliTest, ValidateMeasurementsPlotShowsPredictedBesideMeasuredAndOom) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv", svg = dir / "validate.svg";
  write_file(runs,
             "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes\n"
             "qwen3-1.7b,512,1,16,false,2.15,6360662016\n"
             "qwen3-1.7b,512,4,4,false,0.64,13906214912\n"
             "qwen3-1.7b,512,16,1,true,,\n");
  ok({"validate", "--measurements", runs.string(), "--gpu", "h200", "--memory-limit", "30GiB", "--plot", svg.string()});
  const std::string text = read_file(svg);
  for (const char* needle : {">predicted<", ">measured<", ">OOM<", "1 x 16", "4 x 4", "16 x 1", ">does not fit<",
                             "limit 30.00 GiB", "measured in "})
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
}

TEST(CliTest, ValidateMeasurementsReportsTheWorstCaseAndQuotesCsvLabels) {
  TempDir dir;
  const fs::path runs = dir / "runs.csv";
  // Measured reserved memory 3% above the unbiased prediction of 1x16 would be an
  // under-prediction; the worst case (one logits tensor more) must still cover it.
  write_file(runs,
             "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes\n"
             "qwen3-1.7b,512,1,16,false,2.15,6360662016\n"
             "qwen3-1.7b,512,4,4,false,0.64,13906214912\n");
  const json j = ok_json({"validate", "--measurements", runs.string(), "--gpu", "h200", "--format", "json"});
  double under = 0, worst_under = 0;
  for (const auto& s : j["groups"][0]["splits"]) {
    const double peak = s["predicted_peak_reserved_bytes"], worst = s["predicted_worst_reserved_bytes"];
    const double meas = s["measured_peak_reserved_bytes"];
    EXPECT_GT(worst, peak);
    under = std::max(under, 1 - peak / meas);
    worst_under = std::max(worst_under, 1 - worst / meas);
  }
  EXPECT_DOUBLE_EQ(j["summary"]["mem_max_under_err"].get<double>(), under);
  EXPECT_DOUBLE_EQ(j["summary"]["mem_max_under_err_worst_case"].get<double>(), worst_under);

  const std::vector<std::string> csv =
      lines_of(ok({"validate", "--measurements", runs.string(), "--gpu", "h200", "--format", "csv"}));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_EQ(csv[0].substr(csv[0].rfind(',') + 1), "predicted_worst_reserved_bytes");
  for (size_t i = 1; i < csv.size(); ++i) {
    // The label's commas (q,k,v,...) sit inside quotes; outside them, ten fields.
    EXPECT_EQ(csv[i].rfind("\"qwen3-1.7b L=28 s=512 r=16 q,k,v,o,gate,up,down bf16 B=16\",", 0), 0u) << csv[i];
    const std::string rest = csv[i].substr(csv[i].find("\",") + 2);
    EXPECT_EQ(std::count(rest.begin(), rest.end(), ','), 8) << csv[i];
  }
}

TEST(CliTest, FitPoolsSeveralMeasurementFilesLikeOne) {
  TempDir dir;
  const std::string header = "model,seq_len,micro_batch,accumulation,oom,step_time_s,peak_reserved_bytes\n";
  const std::string a = "qwen3-1.7b,512,1,16,false,4.36,6612320256\nqwen3-1.7b,512,4,4,false,1.14,15780000000\n";
  const std::string b = "qwen3-1.7b,512,16,1,false,0.398,52460000000\nqwen3-1.7b,512,2,8,false,2.21,9670000000\n";
  write_file(dir / "a.csv", header + a);
  write_file(dir / "b.csv", header + b);
  write_file(dir / "all.csv", header + a + b);
  ok({"fit", "--measurements", (dir / "a.csv").string(), "--measurements", (dir / "b.csv").string(), "--gpu", "h200",
      "--out", (dir / "pooled.toml").string()});
  ok({"fit", "--measurements", (dir / "all.csv").string(), "--gpu", "h200", "--out", (dir / "one.toml").string()});
  // Same coefficients; only the provenance lines name the files.
  auto coefficients = [](const std::string& text) {
    return text.substr(text.find("[time]"), text.find("[calibration]") - text.find("[time]"));
  };
  const std::string pooled = read_file(dir / "pooled.toml");
  EXPECT_EQ(coefficients(pooled), coefficients(read_file(dir / "one.toml")));
  EXPECT_NE(pooled.find("--measurements " + (dir / "b.csv").string()), std::string::npos);

  // A missing second file is an error before anything is written.
  const fs::path out = dir / "never.toml";
  expect_error({"fit", "--measurements", (dir / "a.csv").string(), "--measurements", (dir / "gone.csv").string(),
                "--gpu", "h200", "--out", out.string()},
               kConfig, {"gone.csv"});
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliTest, HelpOfSimulateAndValidateShowsPlot) {
  for (const char* command : {"simulate", "validate"}) {
    SCOPED_TRACE(command);
    const std::string out = ok({command, "--help"});
    EXPECT_NE(out.find("--plot"), std::string::npos) << out;
    EXPECT_NE(out.find(".svg"), std::string::npos) << out;
  }
}

TEST(CliTest, VersionPrintsTheVersion) {
  EXPECT_NE(ok({"--version"}).find("lorasim"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------

TEST(CliErrorTest, ZeroEffectiveBatchIsAUsageError) {
  expect_error({"simulate", "--effective-batch", "0"}, kUsage, {"--effective-batch", "0", "at least 1"});
  expect_error({"recommend", "--effective-batch", "0"}, kUsage, {"--effective-batch", "0", "at least 1"});
}

TEST(CliErrorTest, NegativeEffectiveBatchIsAUsageError) {
  expect_error({"simulate", "--effective-batch", "-4"}, kUsage, {"--effective-batch", "-4", "at least 1"});
  expect_error({"simulate", "--effective-batch=-4"}, kUsage, {"--effective-batch", "-4", "at least 1"});
}

TEST(CliErrorTest, ZeroSeqLenIsAUsageError) {
  expect_error({"simulate", "--seq-len", "0"}, kUsage, {"--seq-len", "0", "at least 1"});
}

TEST(CliErrorTest, NonNumericValuesAreUsageErrors) {
  for (const char* flag : {"--effective-batch", "--seq-len", "--lora-rank", "--steps"}) {
    SCOPED_TRACE(flag);
    expect_error({"simulate", flag, "abc"}, kUsage, {flag, "'abc'", "whole number"});
  }
  expect_error({"simulate", "--lora-alpha", "abc"}, kUsage, {"--lora-alpha", "'abc'", "number"});
  expect_error({"simulate", "--safety-margin", "abc"}, kUsage, {"--safety-margin", "'abc'", "number"});
  expect_error({"simulate", "--effective-batch", "16x"}, kUsage, {"--effective-batch", "'16x'"});
}

TEST(CliErrorTest, OutOfRangeNumbersAreUsageErrors) {
  expect_error({"simulate", "--effective-batch", "99999999999999999999"}, kUsage,
               {"--effective-batch", "99999999999999999999", "between 1 and"});
  expect_error({"simulate", "--safety-margin", "0.95"}, kUsage, {"--safety-margin", "0.95", "between 0 and 0.9"});
}

TEST(CliErrorTest, UnknownGpuSuggestsTheNearest) {
  expect_error({"simulate", "--gpu", "h10"}, kUsage, {"'h10'", "h100-sxm", "lorasim profiles"});
}

TEST(CliErrorTest, UnknownModelSuggestsTheNearest) {
  expect_error({"simulate", "--model", "qwen3-1.8b"}, kUsage, {"'qwen3-1.8b'", "qwen3-1.7b", "lorasim models"});
}

TEST(CliErrorTest, MalformedTomlProfileNamesFileAndLine) {
  TempDir dir;
  const fs::path file = dir / "broken.toml";
  const std::string good = builtin_h200_toml();
  const std::string bad = replace_once(good, "memory_bytes = ", "memory_bytes = = ");
  write_file(file, bad);
  const std::string where = file.string() + ":" + std::to_string(line_of(bad, "memory_bytes = = "));
  expect_error({"simulate", "--profile", file.string()}, kConfig, {where});
}

TEST(CliErrorTest, MissingProfileFileIsAConfigError) {
  TempDir dir;
  const std::string path = (dir / "absent.toml").string();
  expect_error({"simulate", "--profile", path}, kConfig, {path});
}

TEST(CliErrorTest, NewerSchemaVersionProfileAsksForAnUpgrade) {
  TempDir dir;
  const fs::path file = dir / "future.toml";
  write_file(file, replace_once(builtin_h200_toml(), "schema_version = 1", "schema_version = 99"));
  expect_error({"simulate", "--profile", file.string()}, kConfig, {file.string(), "schema_version 99", "upgrade"});
}

TEST(CliErrorTest, MalformedConfigJsonNamesFileAndLine) {
  TempDir dir;
  const fs::path file = dir / "config.json";
  // A missing comma at the end of line 3: the parser stops on line 4.
  write_file(file, "{\n  \"hidden_size\": 2048,\n  \"intermediate_size\": 6144\n  \"vocab_size\": 151936\n}\n");
  expect_error({"simulate", "--model-config", file.string()}, kConfig, {file.string() + ":4", "malformed JSON"});
}

TEST(CliErrorTest, ConfigJsonMissingAKeyNamesIt) {
  TempDir dir;
  const fs::path file = dir / "config.json";
  write_file(file, replace_once(kQwen3_1_7bConfig, "\"num_hidden_layers\": 28,", ""));
  expect_error({"simulate", "--model-config", file.string()}, kConfig, {file.string(), "\"num_hidden_layers\""});
}

TEST(CliErrorTest, UnsupportedModelTypeListsTheSupportedOnes) {
  TempDir dir;
  const fs::path file = dir / "config.json";
  write_file(file, replace_once(kQwen3_1_7bConfig, "\"qwen3\"", "\"mixtral\""));
  expect_error({"simulate", "--model-config", file.string()}, kConfig, {"\"mixtral\"", "llama", "qwen3"});
}

TEST(CliErrorTest, LoraRankAboveHiddenSizeIsAUsageError) {
  expect_error({"simulate", "--model", "qwen3-1.7b", "--lora-rank", "4096"}, kUsage,
               {"--lora-rank", "4096", "hidden size 2048"});
}

TEST(CliErrorTest, UnknownLoraTargetListsTheAllowedOnes) {
  expect_error({"simulate", "--lora-targets", "q,qq"}, kUsage, {"'qq'", "q, k, v, o, gate, up, down"});
}

TEST(CliErrorTest, UnknownFlagPointsAtHelp) {
  expect_error({"simulate", "--bogus"}, kUsage, {"--bogus", "lorasim simulate --help"});
  expect_error({"profiles", "--bogus"}, kUsage, {"--bogus", "lorasim profiles --help"});
}

TEST(CliErrorTest, MissingFlagValueIsAUsageError) {
  expect_error({"simulate", "--effective-batch"}, kUsage, {"--effective-batch"});
}

TEST(CliErrorTest, UnknownSubcommandSuggestsTheNearest) {
  expect_error({"simulat"}, kUsage, {"'simulat'", "'simulate'"});
  expect_error({"recomend"}, kUsage, {"'recomend'", "'recommend'"});
}

TEST(CliErrorTest, UnknownFormatListsTheAllowedOnes) {
  for (const char* command : {"simulate", "recommend", "profiles", "models"}) {
    SCOPED_TRACE(command);
    expect_error({command, "--format", "xml"}, kUsage, {"--format", "'xml'", "table, csv or json"});
  }
}

TEST(CliErrorTest, Bf16OnT4IsRefusedWithAnFp16Hint) {
  expect_error({"simulate", "--gpu", "t4", "--precision", "bf16"}, kUsage, {"bf16", "--precision fp16"});
}

TEST(CliErrorTest, UnknownPrecisionListsTheAllowedOnes) {
  expect_error({"simulate", "--precision", "int4"}, kUsage, {"'int4'", "bf16, fp16, fp32"});
}

TEST(CliErrorTest, BadMemoryLimitShowsTheAcceptedForms) {
  expect_error({"simulate", "--memory-limit", "lots"}, kUsage, {"--memory-limit", "'lots'", "24GiB"});
  expect_error({"simulate", "--memory-limit", "0"}, kUsage, {"--memory-limit", "'0'"});
  expect_error({"simulate", "--memory-limit", "1e30"}, kUsage, {"--memory-limit", "'1e30'"});
}

TEST(CliErrorTest, PlotIntoAMissingDirectoryFailsBeforeAnyWork) {
  TempDir dir;
  const std::string path = (dir / "absent" / "x.svg").string();
  expect_error({"simulate", "--plot", path}, kUsage, {"--plot", path, "does not exist"});
  expect_error({"validate", "--measurements", "none.csv", "--plot", path}, kUsage, {"--plot", "does not exist"});
  expect_error({"simulate", "--plot", ""}, kUsage, {"--plot", "file name"});
}

TEST(CliErrorTest, NoArgumentsPrintsUsageAndFails) {
  const RunResult r = run_lorasim({});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("usage: lorasim"), std::string::npos) << r.err;
}

}  // namespace
