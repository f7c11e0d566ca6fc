// The optional [interconnect] table: read, range-checked, written back, refused when malformed,
// and every built-in GPU's datasheet prior (0.7 x the link's bandwidth per direction).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "hwprofiles/builtin.h"
#include "hwprofiles/profile.h"
#include "model/error.h"
#include "tests/hwprofiles/builtin_text.h"

namespace lorasim::hw {
namespace {

// h100-sxm's text with its [interconnect] table replaced by `table` (empty: none).
std::string with_table(const std::string& table) {
  std::string text = builtin_text("h100-sxm");
  const size_t at = text.find("[interconnect]");
  EXPECT_NE(at, std::string::npos);
  const size_t end = text.find("\n[", at + 1);
  return text.substr(0, at) + table + (end == std::string::npos ? "" : text.substr(end + 1));
}

std::string error_of(const std::string& text) {
  try {
    parse_profile(text, "p.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(InterconnectTest, EveryBuiltinGpuHasItsDatasheetLink) {
  const std::map<std::string, std::pair<model::Link, double>> expected = {
      {"h200", {model::Link::nvlink, 315}},     {"h100-sxm", {model::Link::nvlink, 315}},
      {"a100-40gb", {model::Link::nvlink, 210}}, {"a100-80gb", {model::Link::nvlink, 210}},
      {"t4", {model::Link::pcie, 11.2}},        {"l4", {model::Link::pcie, 22.4}},
      {"a10g", {model::Link::pcie, 22.4}}};
  for (const std::string& name : builtin_profile_names()) {
    const Profile p = builtin_profile(name);
    if (!expected.count(name)) continue;  // the CPU base has no peers
    ASSERT_TRUE(p.hw.interconnect) << name;
    EXPECT_EQ(p.hw.interconnect->link, expected.at(name).first) << name;
    EXPECT_DOUBLE_EQ(p.hw.interconnect->allreduce_gbps, expected.at(name).second) << name;
    EXPECT_DOUBLE_EQ(p.hw.interconnect->allreduce_latency_s, p.hw.interconnect->link == model::Link::nvlink ? 5e-6 : 1e-5);
  }
}

TEST(InterconnectTest, AMeasuredGlooCpuLinkRoundTripsWithItsProvenance) {
  const Profile p = parse_profile(with_table("[interconnect]\nlink = \"gloo-cpu\"\nallreduce_gbps = 0.75\n"
                                             "allreduce_latency_s = 1.5e-4\ncalibrated = true\nsource = \"c10d gloo\"\n"),
                                  "p.toml");
  ASSERT_TRUE(p.hw.interconnect);
  EXPECT_EQ(p.hw.interconnect->link, model::Link::gloo_cpu);
  EXPECT_TRUE(p.hw.interconnect->calibrated);
  EXPECT_EQ(p.hw.interconnect->source, "c10d gloo");
  const std::string text = to_toml(p);
  EXPECT_NE(text.find("link = \"gloo-cpu\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("calibrated = true\nsource = \"c10d gloo\"\n"), std::string::npos) << text;
  const Profile again = parse_profile(text, "p.toml");
  EXPECT_EQ(again.hw.interconnect->source, "c10d gloo");
  // A prior table writes no provenance keys: the built-in profiles' text is unchanged.
  const Profile prior = parse_profile(with_table("[interconnect]\nlink = \"pcie\"\nallreduce_gbps = 12.5\nallreduce_latency_s = 2e-5\n"), "p.toml");
  const std::string table = to_toml(prior).substr(to_toml(prior).find("[interconnect]"));
  EXPECT_EQ(table.find("source = \"\"\n"), std::string::npos);
  EXPECT_EQ(table.find("calibrated = false\nsource"), std::string::npos);
}

TEST(InterconnectTest, ATableRoundTripsAndNoTableStaysNone) {
  const Profile with = parse_profile(with_table("[interconnect]\nlink = \"pcie\"\nallreduce_gbps = 12.5\nallreduce_latency_s = 2e-5\n"), "p.toml");
  ASSERT_TRUE(with.hw.interconnect);
  EXPECT_EQ(with.hw.interconnect->link, model::Link::pcie);
  EXPECT_EQ(with.hw.interconnect->allreduce_gbps, 12.5);
  EXPECT_EQ(parse_profile(to_toml(with), "p.toml"), with);
  const Profile without = parse_profile(with_table(""), "p.toml");
  EXPECT_FALSE(without.hw.interconnect);
  EXPECT_EQ(to_toml(without).find("[interconnect]"), std::string::npos);
  EXPECT_NE(with, without);
}

TEST(InterconnectTest, AMalformedTableIsRefusedNamingTheKey) {
  EXPECT_NE(error_of(with_table("[interconnect]\nlink = \"ethernet\"\nallreduce_gbps = 1.0\nallreduce_latency_s = 0.0\n"))
                .find("[interconnect].link must be one of \"nvlink\", \"pcie\", \"gloo-cpu\" (got \"ethernet\")"),
            std::string::npos);
  EXPECT_NE(error_of(with_table("[interconnect]\nlink = \"pcie\"\nallreduce_latency_s = 0.0\n"))
                .find("p.toml: [interconnect].allreduce_gbps is missing"),
            std::string::npos);
  EXPECT_NE(error_of(with_table("[interconnect]\nlink = \"pcie\"\nallreduce_gbps = 0.0\nallreduce_latency_s = 0.0\n"))
                .find("[interconnect].allreduce_gbps must be a bus bandwidth in GB/s in (0, 100000] (got 0.0)"),
            std::string::npos);
  EXPECT_NE(error_of(with_table("[interconnect]\nlink = \"pcie\"\nallreduce_gbps = 10.0\nallreduce_latency_s = -1.0\n"))
                .find("[interconnect].allreduce_latency_s must be a latency in seconds in [0, 1) (got -1.0)"),
            std::string::npos);
  EXPECT_NE(error_of(with_table("[interconnect]\nlink = \"pcie\"\nallreduce_gbps = 10.0\nallreduce_latency_s = 0.0\nbus = 1\n"))
                .find("unknown key [interconnect].bus"),
            std::string::npos);
  std::string top = with_table("");
  top.insert(top.find("schema_version = 1\n") + 19, "interconnect = 3\n");
  EXPECT_NE(error_of(top).find("p.toml:"), std::string::npos) << error_of(top);
  EXPECT_NE(error_of(top).find(": interconnect must be a table ([interconnect]), got an integer"), std::string::npos)
      << error_of(top);
}

}  // namespace
}  // namespace lorasim::hw
