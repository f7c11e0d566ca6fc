// config.json's quantization_config as bitsandbytes writes it (model/quant_config.h).
#include "model/quant_config.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace lorasim::model {
namespace {

std::optional<QuantConfig> parse(const std::string& quantization) {
  return parse_quantization_config(R"({"model_type": "llama", "quantization_config": )" + quantization + "}", "c.json");
}

TEST(QuantConfigTest, FourBitWithBitsAndBytesConfigsDefaults) {
  const auto q = parse(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
                           "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true,
                           "bnb_4bit_compute_dtype": "torch.bfloat16"})");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->format, WeightFormat::nf4);
  EXPECT_TRUE(q->double_quant);
  EXPECT_EQ(q->compute, Precision::bf16);
  // BitsAndBytesConfig's defaults: fp4, no double quantization, compute dtype unset (fp32).
  const auto d = parse(R"({"load_in_4bit": true})");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->format, WeightFormat::fp4);
  EXPECT_FALSE(d->double_quant);
  EXPECT_FALSE(d->compute.has_value());
  EXPECT_EQ(parse(R"({"load_in_8bit": true})")->format, WeightFormat::int8);
}

TEST(QuantConfigTest, NothingQuantizedOrNoConfigIsAFloatBase) {
  EXPECT_FALSE(parse(R"({"quant_method": "bitsandbytes", "load_in_4bit": false, "load_in_8bit": false})"));
  EXPECT_FALSE(parse_quantization_config(R"({"model_type": "llama"})", "c.json"));
  EXPECT_FALSE(parse_quantization_config("{ not json", "c.json"));  // hf_config's to report
}

TEST(QuantConfigTest, WhatIsNotModelledIsRefusedNamingTheKey) {
  EXPECT_THROW(parse(R"({"quant_method": "gptq", "bits": 4})"), ConfigError);
  EXPECT_THROW(parse(R"({"load_in_4bit": true, "load_in_8bit": true})"), ConfigError);
  EXPECT_THROW(parse(R"({"load_in_4bit": true, "bnb_4bit_quant_type": "int4"})"), ConfigError);
  EXPECT_THROW(parse(R"({"load_in_4bit": true, "bnb_4bit_compute_dtype": "float8"})"), ConfigError);
  EXPECT_THROW(parse(R"({"load_in_4bit": "yes"})"), ConfigError);
  try {
    parse(R"({"quant_method": "awq"})");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "c.json: quantization_config.quant_method \"awq\" is not modelled: lorasim models "
                           "bitsandbytes (load_in_4bit, load_in_8bit) only");
  }
}

}  // namespace
}  // namespace lorasim::model
