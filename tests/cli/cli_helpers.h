// Shared by the end-to-end CLI tests (one file per command): the exit codes, the error
// contract, JSON and split checks, and fixtures such as a published config.json.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_lorasim.h"

namespace lorasim::testing {

using nlohmann::json;

inline constexpr int kUsage = 2;   // cli/args.h: bad flag or value
inline constexpr int kConfig = 3;  // cli/args.h: bad file

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << p;
}

/// Runs a command that must succeed quietly and returns its stdout.
inline std::string ok(const std::vector<std::string>& args) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, 0) << describe(args, r);
  EXPECT_EQ(r.err, "") << describe(args, r);
  return r.out;
}

inline json ok_json(const std::vector<std::string>& args) {
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
inline void expect_error(const std::vector<std::string>& args, int code,
                  std::initializer_list<std::string> needles) {
  const RunResult r = run_lorasim(args);
  EXPECT_EQ(r.exit_code, code) << describe(args, r);
  EXPECT_EQ(r.out, "") << describe(args, r);
  const std::vector<std::string> lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << describe(args, r);
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << describe(args, r);
  for (const auto& n : needles) EXPECT_NE(lines[0].find(n), std::string::npos) << "wants '" << n << "'\n" << describe(args, r);
}

inline std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t b = 1; b <= n; ++b)
    if (n % b == 0) d.push_back(b);
  return d;
}

inline void expect_splits_json(const json& j, int64_t effective_batch) {
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
inline constexpr const char* kQwen3_1_7bConfig = R"({
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

inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// 1-based line of the first occurrence of `needle`.
inline int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

inline std::string builtin_h200_toml() {
  return read_file(fs::path(LORASIM_SOURCE_DIR) / "hwprofiles" / "h200.toml");
}

inline std::vector<std::string> with(std::vector<std::string> base, std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}

}  // namespace lorasim::testing
