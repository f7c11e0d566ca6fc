// parse_hf_config for Gemma 2, Gemma 3 (text and the multimodal wrapper) and Phi-3: the published
// config.json files' fields, the config classes' defaults where a file leaves a field out, and the
// settings lorasim does not count refused by name.
#include <gtest/gtest.h>

#include <string>

#include "model/analytics.h"
#include "model/error.h"
#include "model/hf_config.h"

namespace lorasim::model {
namespace {

// google/gemma-2-2b's config.json (the fields that matter; the rest are token ids and init).
const char* kGemma2 = R"({"architectures": ["Gemma2ForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
  "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 2304, "intermediate_size": 9216, "max_position_embeddings": 8192,
  "model_type": "gemma2", "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
  "vocab_size": 256000})";

// google/gemma-3-4b-it's config.json: the text_config leaves most fields to Gemma3TextConfig.
const char* kGemma3 = R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
  "mm_tokens_per_image": 256,
  "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
  "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
    "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
    "patch_size": 14, "vision_use_head": false}})";

// microsoft/Phi-3-mini-4k-instruct's config.json.
const char* kPhi3 = R"({"architectures": ["Phi3ForCausalLM"], "attention_dropout": 0.0, "embd_pdrop": 0.0,
  "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 4096,
  "model_type": "phi3", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
  "original_max_position_embeddings": 4096, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": false, "vocab_size": 32064})";

std::string error_of(const std::string& text) {
  try {
    parse_hf_config(text, "config.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

LoraSpec all_targets() { return LoraSpec{}; }

TEST(HfConfigFamiliesTest, Gemma2ReadsSoftCapsWindowAndAlternatingLayers) {
  const Architecture a = parse_hf_config(kGemma2, "config.json");
  EXPECT_EQ(a.model_type, "gemma2");
  EXPECT_TRUE(a.sandwich_norms);
  EXPECT_TRUE(a.tie_embeddings);  // Gemma2Config's default: the file does not say
  EXPECT_FALSE(a.qk_norm);
  EXPECT_EQ(a.final_logit_softcap, 30.0);
  EXPECT_EQ(a.attn_logit_softcap, 50.0);
  EXPECT_EQ(a.sliding_window, 4096);
  EXPECT_EQ(a.local_layer_count(), 13);
  EXPECT_TRUE(a.is_local(0));
  EXPECT_FALSE(a.is_local(25));
  EXPECT_EQ(count_params(a, all_targets()).base, 2614341888);
}

TEST(HfConfigFamiliesTest, NullSwitchesASoftCapOrTheWindowOff) {
  const Architecture a = parse_hf_config(
      replaced(replaced(kGemma2, "\"final_logit_softcapping\": 30.0", "\"final_logit_softcapping\": null"),
               "\"sliding_window\": 4096", "\"sliding_window\": null"),
      "config.json");
  EXPECT_EQ(a.final_logit_softcap, 0.0);
  EXPECT_EQ(a.attn_logit_softcap, 50.0);
  EXPECT_EQ(a.local_layer_count(), 0);
}

TEST(HfConfigFamiliesTest, LayerTypesAreReadWhenGiven) {
  std::string types = "[";
  for (int i = 0; i < 26; ++i) types += std::string(i ? "," : "") + (i < 3 ? "\"sliding_attention\"" : "\"full_attention\"");
  const Architecture a =
      parse_hf_config(replaced(kGemma2, "\"vocab_size\"", "\"layer_types\": " + types + "], \"vocab_size\""), "c");
  EXPECT_EQ(a.local_layer_count(), 3);
  EXPECT_EQ(error_of(replaced(kGemma2, "\"vocab_size\"", "\"layer_types\": [\"full_attention\"], \"vocab_size\"")),
            "config.json: \"layer_types\" names 1 layers but \"num_hidden_layers\" is 26");
  EXPECT_EQ(error_of(replaced(kGemma2, "\"vocab_size\"", "\"layer_types\": " +
                                                         replaced(types, "\"full_attention\"", "\"chunked\"") +
                                                         "], \"vocab_size\"")),
            "config.json: \"layer_types\"[3] is \"chunked\": expected \"sliding_attention\" or \"full_attention\"");
}

TEST(HfConfigFamiliesTest, Gemma3WrapperCountsTheTextDecoderAndTheVisionTowersWeights) {
  const Architecture a = parse_hf_config(kGemma3, "config.json");
  EXPECT_EQ(a.model_type, "gemma3_text");
  EXPECT_TRUE(a.qk_norm);
  EXPECT_EQ(a.vocab_size, 262208);  // Gemma3TextConfig's defaults fill the rest
  EXPECT_EQ(a.num_heads, 8);
  EXPECT_EQ(a.num_kv_heads, 4);
  EXPECT_EQ(a.head_dim, 256);
  EXPECT_EQ(a.final_logit_softcap, 0.0);
  EXPECT_EQ(a.local_layer_count(), 34 - 5);  // full: 5, 11, 17, 23, 29
  // SigLIP: patch conv 3 x 14 x 14 x 1152 + 1152, positions 64 x 64 x 1152, 27 layers of
  // 15,239,504, post norm 2 x 1152; projector 1152 x 2560 + 1152.
  EXPECT_EQ(a.extra_frozen_params, 678528 + 4718592 + 27 * 15239504 + 2304 + 2949120 + 1152);
  // google/gemma-3-4b-it's published total.
  const ParamCounts c = count_params(a, all_targets());
  EXPECT_EQ(c.base, 4300079472);
  EXPECT_EQ(c.outside_decoder, 419816304);
  // Adapters only on the text decoder: the same as the preset's.
  EXPECT_EQ(c.trainable, count_params(preset("gemma-3-4b"), all_targets()).trainable);
}

TEST(HfConfigFamiliesTest, Gemma3VisionTowerFieldsAreCheckedByName) {
  EXPECT_EQ(error_of(replaced(kGemma3, "\"patch_size\": 14,", "")),
            "config.json: vision_config: missing key \"patch_size\" (a Llama/Qwen/Mistral config.json has it)");
  EXPECT_EQ(error_of(replaced(kGemma3, "\"vision_use_head\": false", "\"vision_use_head\": true")),
            "config.json: vision_config: \"vision_use_head\" true is not counted (Gemma 3 has no pooling head)");
}

TEST(HfConfigFamiliesTest, Phi3ReadsFusedProjectionsAndItsWindow) {
  const Architecture a = parse_hf_config(kPhi3, "config.json");
  EXPECT_EQ(a.model_type, "phi3");
  EXPECT_TRUE(a.fused_qkv);
  EXPECT_TRUE(a.fused_gate_up);
  EXPECT_EQ(a.head_dim, 96);
  EXPECT_EQ(a.local_layer_count(), 32);
  EXPECT_EQ(a.sliding_window, 2047);
  EXPECT_EQ(count_params(a, all_targets()).base, 3821079552);
  // Phi-3.5's longrope scaling and a partial rotary factor (Phi-4-mini) are accepted.
  const std::string longrope = replaced(kPhi3, "\"rope_scaling\": null",
                                        "\"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": [1.0], "
                                        "\"short_factor\": [1.0]}, \"partial_rotary_factor\": 0.75");
  EXPECT_EQ(error_of(longrope), "");
}

TEST(HfConfigFamiliesTest, DropoutAndBiasesTheCountsLeaveOutAreRefusedByName) {
  EXPECT_EQ(error_of(replaced(kPhi3, "\"resid_pdrop\": 0.0", "\"resid_pdrop\": 0.1")),
            "config.json: \"resid_pdrop\" is 0.1: lorasim counts these models without dropout in the decoder (set "
            "it to 0.0)");
  EXPECT_EQ(error_of(replaced(kGemma2, "\"attention_bias\": false", "\"attention_bias\": true")),
            "config.json: \"attention_bias\" true is not counted for gemma2 (its published configs have none)");
  EXPECT_EQ(error_of(replaced(kPhi3, "\"rope_scaling\": null", "\"partial_rotary_factor\": 1.5")),
            "config.json: \"partial_rotary_factor\" must be in (0, 1]");
}

// Found while adding the window: a window beyond int64 was cast (undefined), and a Gemma config of
// a billion layers built its list of local layers before the layer bound refused it.
TEST(HfConfigFamiliesTest, WindowsAndLayerCountsBeyondTheBoundsAreRefusedByName) {
  EXPECT_EQ(error_of(replaced(kGemma2, "\"sliding_window\": 4096", "\"sliding_window\": 1e300")),
            "config.json: \"sliding_window\" must be an integer, got 1e+300");
  EXPECT_EQ(error_of(replaced(kPhi3, "\"sliding_window\": 2047", "\"sliding_window\": 0")),
            "config.json: \"sliding_window\" must be a positive number of tokens or null, got 0");
  for (const char* text : {kGemma2, kPhi3}) {
    const std::string huge = replaced(text, "\"num_hidden_layers\": ", "\"num_hidden_layers\": 1000000000, \"x\": ");
    EXPECT_EQ(error_of(huge), "model 'config.json' is too large: num_hidden_layers is 1000000000, above 1024 (far "
                              "beyond any published decoder)");
  }
}

TEST(HfConfigFamiliesTest, OtherModelTypesAreStillRefusedByName) {
  EXPECT_EQ(error_of(replaced(kGemma2, "\"gemma2\"", "\"gemma\"")),
            "config.json: model_type \"gemma\" is not supported: lorasim models llama, mistral, qwen2, qwen3, gemma2, "
            "gemma3 (gemma3_text) and phi3 (dense decoder-only) architectures");
  EXPECT_NE(error_of(replaced(kPhi3, "\"phi3\"", "\"phimoe\"")).find("\"phimoe\" is not supported"), std::string::npos);
}

}  // namespace
}  // namespace lorasim::model
