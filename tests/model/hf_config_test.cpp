// parse_hf_config: malformed config.json text is a ConfigError naming the file, never another
// exception (regressions found while fuzzing, docs/fuzzing.md).
#include "model/hf_config.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lorasim::model
