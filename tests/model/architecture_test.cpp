// Architecture::validate's bounds and the presets' lookup: sizes no decoder has are refused
// naming the field, and the library's messages name quantities, never a CLI flag.
#include "model/architecture.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model/error.h"

namespace lorasim::model {
namespace {

std::string validate_error(const Architecture& a) {
  try {
    a.validate();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ArchitectureTest, EveryPresetIsWithinTheBounds) {
  for (const Architecture& a : presets()) EXPECT_EQ(validate_error(a), "") << a.name;
}

TEST(ArchitectureTest, EachBoundIsInclusive) {
  Architecture a = preset("tiny");
  a.num_layers = kMaxLayers;
  EXPECT_EQ(validate_error(a), "");
  a.num_layers = kMaxLayers + 1;
  EXPECT_EQ(validate_error(a),
            "model 'tiny' is too large: num_hidden_layers is 1025, above 1024 (far beyond any published decoder)");
  a = preset("tiny");
  a.num_heads = a.num_kv_heads = kMaxHeads;
  EXPECT_EQ(validate_error(a), "");
  a.num_heads = a.num_kv_heads = 2 * kMaxHeads;
  EXPECT_EQ(validate_error(a),
            "model 'tiny' is too large: num_attention_heads is 2048, above 1024 (far beyond any published decoder)");
}

TEST(ArchitectureTest, UnknownPresetNamesTheNearestAndNoFlag) {
  try {
    preset("mistral-7c");
    FAIL() << "found";
  } catch (const InputError& e) {
    // The library names the quantity; the CLI adds the flag and where to look (cli/).
    EXPECT_STREQ(e.what(), "unknown model 'mistral-7c', did you mean 'mistral-7b'?");
    EXPECT_EQ(e.quantity(), "model");
  }
}

}  // namespace
}  // namespace lorasim::model
