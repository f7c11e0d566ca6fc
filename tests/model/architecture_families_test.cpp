// Gemma 2, Gemma 3 and Phi-3 presets: parameter counts against the published totals, what their
// fused projections mean for LoRA, their local layers, and the runner's refusal.
#include <gtest/gtest.h>

#include <string>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/error.h"
#include "model/lora.h"

namespace lorasim::model {
namespace {

std::string validate_message(const Architecture& a) {
  try {
    a.validate();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

LoraSpec lora_on(const std::string& targets, int64_t rank = 16) {
  LoraSpec l;
  l.rank = rank;
  l.targets = parse_targets(targets);
  return l;
}

TEST(ArchitectureFamiliesTest, ParameterCountsAreThePublishedTotals) {
  const LoraSpec none = lora_on("q");  // the frozen count does not depend on the adapters
  // google/gemma-2-2b: 589,824,000 embedding (tied) + 26 x 77,865,984 + 2,304 final norm.
  EXPECT_EQ(count_params(preset("gemma-2-2b"), none).base, 2614341888);
  EXPECT_EQ(count_params(preset("gemma-2-2b"), none).per_layer, 77865984);
  EXPECT_EQ(count_params(preset("gemma-2-9b"), none).base, 9241705984);
  // google/gemma-3-1b: four hidden norms and two 256-wide q/k norms per block.
  EXPECT_EQ(count_params(preset("gemma-3-1b"), none).base, 999885952);
  EXPECT_EQ(count_params(preset("gemma-3-1b"), none).per_layer, 26836992 + 4 * 1152 + 2 * 256);
  // gemma-3-4b's text decoder (vocabulary 262,208; the vision tower is not in the preset).
  EXPECT_EQ(count_params(preset("gemma-3-4b"), none).base, 3880263168);
  // microsoft/Phi-3-mini-4k-instruct: untied 32,064 x 3,072 embedding and head; 32 x 113,252,352.
  const Architecture& phi = preset("phi-3-mini");
  EXPECT_EQ(count_params(phi, lora_on("qkv_proj")).base, 3821079552);
  EXPECT_EQ(count_params(phi, lora_on("qkv_proj")).per_layer, 113252352);
  EXPECT_EQ(count_params(preset("phi-3.5-mini"), lora_on("qkv_proj")).base, 3821079552);
}

TEST(ArchitectureFamiliesTest, PhiFusedProjectionsCarryOneAdapterEach) {
  const Architecture& phi = preset("phi-3-mini");
  const auto p = block_projections(phi);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].out_features, 3072 + 2 * 3072);  // qkv_proj
  EXPECT_EQ(p[2].out_features, 2 * 8192);         // gate_up_proj
  // r = 16 on all four: qkv 16 x (3072 + 9216), o 16 x 6144, gate_up 16 x (3072 + 16384),
  // down 16 x (8192 + 3072).
  const ParamCounts c = count_params(phi, lora_on("all"));
  EXPECT_EQ(c.lora_per_layer, 196608 + 98304 + 311296 + 180224);
  EXPECT_EQ(c.trainable, 32 * 786432);
  EXPECT_EQ(c.lora_tensors, 4 * 2 * 32);
  EXPECT_EQ(adapted_projections(phi, lora_on("all")), 4);
  // Fewer than three separate q/k/v adapters (294,912) would have.
  EXPECT_EQ(count_params(phi, lora_on("qkv_proj")).lora_per_layer, 196608);
  EXPECT_EQ(count_params(phi, lora_on("q,k,v")).lora_per_layer, 196608);
  EXPECT_EQ(count_params(phi, lora_on("o_proj,down_proj")).lora_per_layer, 98304 + 180224);
}

TEST(ArchitectureFamiliesTest, PartOfAFusedProjectionIsRefusedNamingTheModule) {
  const Architecture& phi = preset("phi-3-mini");
  try {
    count_params(phi, lora_on("q_proj,v_proj"));
    FAIL() << "q and v without k accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model 'phi-3-mini' (phi3) fuses q, k and v into one qkv_proj: adapt qkv_proj whole (LoRA targets "
              "qkv_proj or all) or leave all of q, k and v out, got q,v");
    EXPECT_EQ(e.quantity(), "lora_targets");
  }
  EXPECT_THROW(count_params(phi, lora_on("gate")), InputError);
  // Unfused models take any subset.
  EXPECT_EQ(count_params(preset("gemma-2-2b"), lora_on("q,v")).lora_per_layer, 16 * (2304 + 2048) + 16 * (2304 + 1024));
}

TEST(ArchitectureFamiliesTest, FusedNamesParseToTheirParts) {
  EXPECT_EQ(parse_targets("qkv_proj,o_proj,gate_up_proj,down_proj"), parse_targets("all"));
  EXPECT_EQ(parse_targets("qkv"), parse_targets("q,k,v"));
  EXPECT_EQ(parse_targets("gate_up"), parse_targets("gate_proj,up_proj"));
  EXPECT_THROW(parse_targets("qkvproj"), InputError);
}

TEST(ArchitectureFamiliesTest, LocalLayersFollowTheConfigClassesDefaults) {
  const Architecture& g2 = preset("gemma-2-2b");
  EXPECT_EQ(g2.local_layer_count(), 13);  // layers 0, 2, 4, ...
  EXPECT_TRUE(g2.is_local(0));
  EXPECT_FALSE(g2.is_local(1));
  const Architecture& g3 = preset("gemma-3-1b");
  EXPECT_EQ(g3.local_layer_count(), 22);  // full: 5, 11, 17, 23
  EXPECT_FALSE(g3.is_local(5));
  EXPECT_TRUE(g3.is_local(6));
  EXPECT_EQ(preset("phi-3-mini").local_layer_count(), 32);
  EXPECT_EQ(preset("llama-3.2-1b").local_layer_count(), 0);
  // Truncation keeps the first layers' pattern.
  const Architecture t = truncated(g3, 6);
  EXPECT_EQ(t.local_layers.size(), 6u);
  EXPECT_EQ(t.local_layer_count(), 5);
  EXPECT_EQ(validate_message(t), "");
}

TEST(ArchitectureFamiliesTest, LayerTypesOfAnotherLengthAreRefused) {
  Architecture a = preset("gemma-2-2b");
  a.local_layers.pop_back();
  EXPECT_EQ(validate_message(a), "model 'gemma-2-2b': layer_types names 25 layers but num_hidden_layers is 26");
}

TEST(ArchitectureFamiliesTest, TheRunnerRefusesTheNewFamiliesOnly) {
  for (const char* name : {"gemma-2-2b", "gemma-3-1b", "phi-3-mini"})
    EXPECT_NE(runner_refusal(preset(name)).find("is modelled for the hf-peft stack"), std::string::npos) << name;
  EXPECT_EQ(runner_refusal(preset("gemma-2-2b")),
            "model 'gemma-2-2b' (gemma2) is modelled for the hf-peft stack (Transformers + PEFT) only: lorasim's own "
            "runner builds Llama / Qwen / Mistral blocks");
  for (const char* name : {"qwen3-1.7b", "llama-3.1-8b", "mistral-7b", "tiny"})
    EXPECT_EQ(runner_refusal(preset(name)), "") << name;
}

}  // namespace
}  // namespace lorasim::model
