// End-to-end tests of what every command shares (cli/main.cpp): help, --version, unknown
// commands and flags, and the usage printed with no arguments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

TEST(MainCliTest, HelpOfEverySubcommandShowsExamples) {
  for (const char* command : {"simulate", "recommend", "profiles", "models"}) {
    for (const char* flag : {"--help", "-h"}) {
      SCOPED_TRACE(std::string(command) + " " + flag);
      const std::string out = ok({command, flag});
      EXPECT_NE(out.find("usage: lorasim " + std::string(command)), std::string::npos) << out;
      EXPECT_NE(out.find("examples"), std::string::npos) << out;
    }
  }
  EXPECT_NE(ok({"--help"}).find("examples"), std::string::npos);
}

TEST(MainCliTest, HelpOfSimulateAndValidateShowsPlot) {
  for (const char* command : {"simulate", "validate"}) {
    SCOPED_TRACE(command);
    const std::string out = ok({command, "--help"});
    EXPECT_NE(out.find("--plot"), std::string::npos) << out;
    EXPECT_NE(out.find(".svg"), std::string::npos) << out;
  }
}

TEST(MainCliTest, VersionPrintsTheVersion) {
  EXPECT_NE(ok({"--version"}).find("lorasim"), std::string::npos);
}

TEST(MainCliErrorTest, UnknownFlagPointsAtHelp) {
  expect_error({"simulate", "--bogus"}, kUsage, {"--bogus", "lorasim simulate --help"});
  expect_error({"profiles", "--bogus"}, kUsage, {"--bogus", "lorasim profiles --help"});
}

TEST(MainCliErrorTest, UnknownSubcommandSuggestsTheNearest) {
  expect_error({"simulat"}, kUsage, {"'simulat'", "'simulate'"});
  expect_error({"recomend"}, kUsage, {"'recomend'", "'recommend'"});
}

TEST(MainCliErrorTest, UnknownFormatListsTheAllowedOnes) {
  for (const char* command : {"simulate", "recommend", "profiles", "models"}) {
    SCOPED_TRACE(command);
    expect_error({command, "--format", "xml"}, kUsage, {"--format", "'xml'", "table, csv or json"});
  }
}

TEST(MainCliErrorTest, NoArgumentsPrintsUsageAndFails) {
  const RunResult r = run_lorasim({});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("usage: lorasim"), std::string::npos) << r.err;
}

}  // namespace
