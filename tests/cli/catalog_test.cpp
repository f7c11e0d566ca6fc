// End-to-end tests of `lorasim profiles` and `lorasim models`: every entry in every format.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

TEST(CatalogCliTest, ProfilesListsEveryBuiltinInEveryFormat) {
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

TEST(CatalogCliTest, ModelsListsThePresetsInEveryFormat) {
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

}  // namespace
