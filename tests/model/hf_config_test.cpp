// parse_hf_config: malformed config.json text is a ConfigError naming the file, never another
// exception (regressions found while fuzzing, docs/fuzzing.md); sizes no decoder has are refused
// naming the key.
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

// The message parse_hf_config throws for kQwen3 with `from` replaced by `to`, or "" when it parses.
std::string error_with(const std::string& from, const std::string& to) {
  std::string text = kQwen3;
  if (text.find(from) == std::string::npos) return "test error: '" + from + "' is not in kQwen3";
  text.replace(text.find(from), from.size(), to);
  try {
    parse_hf_config(text, "big/config.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfigTest, SizesBeyondAnyDecoderAreRefusedNamingTheKey) {
  // A billion layers fit int64 (5e16 parameters) and passed; building the model then never ended.
  EXPECT_EQ(error_with("\"num_hidden_layers\": 28", "\"num_hidden_layers\": 1000000000"),
            "model 'big/config.json' is too large: num_hidden_layers is 1000000000, above 1024 (far beyond any "
            "published decoder)");
  EXPECT_EQ(error_with("\"hidden_size\": 2048", "\"hidden_size\": 1048576"),
            "model 'big/config.json' is too large: hidden_size is 1048576, above 65536 (far beyond any published "
            "decoder)");
  EXPECT_EQ(error_with("\"intermediate_size\": 6144", "\"intermediate_size\": 300000"),
            "model 'big/config.json' is too large: intermediate_size is 300000, above 262144 (far beyond any "
            "published decoder)");
  EXPECT_EQ(error_with("\"num_attention_heads\": 16, \"num_key_value_heads\": 8",
                       "\"num_attention_heads\": 2048, \"num_key_value_heads\": 8"),
            "model 'big/config.json' is too large: num_attention_heads is 2048, above 1024 (far beyond any "
            "published decoder)");
  EXPECT_EQ(error_with("\"head_dim\": 128", "\"head_dim\": 4096"),
            "model 'big/config.json' is too large: head_dim is 4096, above 1024 (far beyond any published decoder)");
  EXPECT_EQ(error_with("\"vocab_size\": 151936", "\"vocab_size\": 100000000"),
            "model 'big/config.json' is too large: vocab_size is 100000000, above 4194304 (far beyond any "
            "published decoder)");
}

TEST(HfConfigTest, TheBoundsThemselvesAreAccepted) {
  EXPECT_EQ(error_with("\"num_hidden_layers\": 28", "\"num_hidden_layers\": 1024"), "");
  EXPECT_EQ(error_with("\"vocab_size\": 151936", "\"vocab_size\": 4194304"), "");
  EXPECT_EQ(error_with("\"hidden_size\": 2048, \"intermediate_size\": 6144",
                       "\"hidden_size\": 65536, \"intermediate_size\": 262144"),
            "");
}

TEST(HfConfigTest, NonPositiveNormEpsilonOrRopeBaseIsRefused) {
  EXPECT_EQ(error_with("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": true, \"rms_norm_eps\": -1e-6"),
            "model 'big/config.json': rms_norm_eps must be positive");
  EXPECT_EQ(error_with("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": true, \"rope_theta\": 0"),
            "model 'big/config.json': rope_theta must be positive");
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
