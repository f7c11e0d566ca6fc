// parse_hf_config: malformed config.json text is a ConfigError naming the file, never another
// exception (regressions found while fuzzing, docs/fuzzing.md).
#include "model/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "model/error.h"

namespace lorasim::model {
namespace {

const char* kQwen3 = R"({"model_type": "qwen3", "hidden_size": 2048, "intermediate_size": 6144,
  "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
  "vocab_size": 151936, "tie_word_embeddings": true})";

TEST(HfConfigTest, ParsesPublishedFields) {
  const Architecture a = parse_hf_config(kQwen3, "config.json");
  EXPECT_EQ(a.hidden_size, 2048);
  EXPECT_EQ(a.num_kv_heads, 8);
  EXPECT_TRUE(a.qk_norm);
}

TEST(HfConfigTest, NumberBeyondDoubleIsConfigError) {
  EXPECT_THROW(parse_hf_config(R"({"hidden_size": 1e999})", "config.json"), ConfigError);
}

TEST(HfConfigTest, NonStringModelTypeIsConfigError) {
  EXPECT_THROW(parse_hf_config(R"({"model_type": 3})", "config.json"), ConfigError);
  EXPECT_THROW(parse_hf_config(R"({"model_type": ["llama"]})", "config.json"), ConfigError);
}

TEST(HfConfigTest, NullModelTypeMeansUnspecified) {
  std::string text = kQwen3;
  text.replace(text.find("\"qwen3\""), 7, "null");
  EXPECT_EQ(parse_hf_config(text, "config.json").hidden_size, 2048);
}

TEST(HfConfigTest, IntegerBeyondInt64IsConfigErrorNotANegativeValue) {
  std::string text = kQwen3;
  text.replace(text.find("151936"), 6, "18446744073709551615");
  try {
    parse_hf_config(text, "config.json");
    FAIL() << "2^64 - 1 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"vocab_size\" is too large"), std::string::npos) << e.what();
  }
}

TEST(HfConfigTest, CountsBeyondInt64AreConfigErrorsNamingTheFile) {
  // Each wrapped into a negative parameter count that was printed ("-2062744066729963520 frozen").
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"vocab_size\": 151936", "\"vocab_size\": 2000000000000000"},
           {"\"num_hidden_layers\": 28", "\"num_hidden_layers\": 4611686018427387904"},
           {"\"num_attention_heads\": 16, \"num_key_value_heads\": 8",
            "\"num_attention_heads\": 4611686018427387904, \"num_key_value_heads\": 4611686018427387904"}}) {
    SCOPED_TRACE(to);
    std::string text = kQwen3;
    ASSERT_NE(text.find(from), std::string::npos);
    text.replace(text.find(from), from.size(), to);
    try {
      parse_hf_config(text, "big/config.json");
      FAIL() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("model 'big/config.json' is too large"), std::string::npos) << e.what();
    }
  }
}

TEST(HfConfigTest, ADirectoryIsNamedAsOneAndItsConfigJsonOffered) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "hf_config_test_dir";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "config.json");
  try {
    load_hf_config(dir.string());
    FAIL() << "a directory was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "config.json") << kQwen3;
  try {
    load_hf_config(dir.string());
    FAIL() << "a directory was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pass " + (dir / "config.json").string()), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lorasim::model
