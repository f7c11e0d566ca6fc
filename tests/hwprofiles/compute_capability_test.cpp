// [gpu].compute_capability: every embedded GPU states its datasheet figure, a profile file may
// leave it out (unknown), a malformed one is refused at its position, and it round-trips.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "hwprofiles/builtin.h"
#include "hwprofiles/profile.h"
#include "model/error.h"
#include "tests/hwprofiles/builtin_text.h"

namespace lorasim::hw {
namespace {

std::string with_capability(const std::string& line) {
  std::string text = builtin_text("t4");
  const size_t at = text.find("\ncompute_capability =");
  EXPECT_NE(at, std::string::npos);
  const size_t end = text.find('\n', at + 1);
  text.replace(at + 1, end - at, line.empty() ? "" : line + "\n");
  return text;
}

std::string parse_error(const std::string& text) {
  try {
    parse_profile(text, "cc.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ComputeCapabilityTest, EveryEmbeddedGpuHasItsDatasheetFigure) {
  const std::map<std::string, std::string> want = {{"t4", "7.5"},        {"l4", "8.9"},        {"a10g", "8.6"},
                                                   {"a100-40gb", "8.0"}, {"a100-80gb", "8.0"}, {"h100-sxm", "9.0"},
                                                   {"h200", "9.0"}};
  for (const std::string& name : builtin_profile_names()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(want.count(name));
    EXPECT_EQ(model::compute_capability(builtin_profile(name).hw), want.at(name));
  }
  EXPECT_EQ(builtin_profile("t4").hw.compute_capability_major, 7);
  EXPECT_EQ(builtin_profile("t4").hw.compute_capability_minor, 5);
}

TEST(ComputeCapabilityTest, AProfileWithoutItIsOfUnknownCapability) {
  const Profile p = parse_profile(with_capability(""), "old.toml");
  EXPECT_EQ(p.hw.compute_capability_major, 0);
  EXPECT_EQ(model::compute_capability(p.hw), "");
  EXPECT_EQ(to_toml(p).find("compute_capability"), std::string::npos);  // nothing invented on writing
}

TEST(ComputeCapabilityTest, AMalformedOneIsRefusedAtItsLine) {
  for (const char* bad : {"compute_capability = \"7\"", "compute_capability = \"sm75\"", "compute_capability = \"7.5.1\"",
                          "compute_capability = \"0.5\"", "compute_capability = \".5\"", "compute_capability = \"7.\"",
                          "compute_capability = \"-7.5\""}) {
    SCOPED_TRACE(bad);
    const std::string msg = parse_error(with_capability(bad));
    EXPECT_NE(msg.find("cc.toml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[gpu].compute_capability must be \"MAJOR.MINOR\""), std::string::npos) << msg;
  }
  EXPECT_NE(parse_error(with_capability("compute_capability = 7.5")).find("must be a string"), std::string::npos);
  EXPECT_EQ(parse_error(with_capability("compute_capability = \"12.0\"")), "");
}

TEST(ComputeCapabilityTest, ItRoundTripsThroughToToml) {
  const Profile p = builtin_profile("a10g");
  const std::string text = to_toml(p);
  EXPECT_NE(text.find("compute_capability = \"8.6\"\n"), std::string::npos) << text;
  const Profile back = parse_profile(text, "back.toml");
  EXPECT_EQ(back.hw.compute_capability_major, 8);
  EXPECT_EQ(back.hw.compute_capability_minor, 6);
  Profile other = back;
  other.hw.compute_capability_minor = 0;
  EXPECT_NE(back, other);  // it is part of what makes two profiles equal
}

}  // namespace
}  // namespace lorasim::hw
