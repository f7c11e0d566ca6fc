// The coefficient table's rows as a profile holds them: a row added after profiles were
// written (an optional row) and the ranges that refuse absurd values, each naming the key,
// the file and the position.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hwprofiles/builtin.h"
#include "hwprofiles/profile.h"
#include "model/coefficients.h"
#include "model/error.h"
#include "tests/hwprofiles/builtin_text.h"

namespace lorasim::hw {
namespace {

// `text` with the line that starts with `key = ` replaced by `line`.
std::string with_line(const std::string& text, const std::string& key, const std::string& line) {
  const size_t at = text.find("\n" + key + " = ");
  EXPECT_NE(at, std::string::npos) << key;
  const size_t end = text.find('\n', at + 1);
  return text.substr(0, at + 1) + line + text.substr(end);
}

std::string parse_error(const std::string& text) {
  try {
    parse_profile(text, "test.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The line of `key` in `text`, 1-based, as "test.toml:LINE:".
std::string position_of(const std::string& text, const std::string& key) {
  const size_t at = text.find("\n" + key + " = ");
  int line = 1;
  for (size_t i = 0; i <= at; ++i) line += text[i] == '\n';
  return "test.toml:" + std::to_string(line) + ":";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// Adds a row to the process's table, reads the embedded h200.toml and exits 0 when it read as
// it should (a child process of the test: the row stays out of every other test's table).
[[noreturn]] void add_a_row_and_read_h200() {
  model::Coefficient row;
  row.name = "trial_share";
  row.why = "a coefficient under trial";
  row.device = {"time", 0.25, model::Range::share, model::Fit::never, true, nullptr};
  const double gemm_before = builtin_profile("h200").hw.value("gemm_tflops");
  model::add_coefficient(row);
  const Profile p = parse_profile(builtin_text("h200"), "builtin:h200.toml");
  // The profile lacks the key: the row's prior stands in, and everything else reads as before.
  bool ok = p.hw.value("trial_share") == 0.25 && p.hw.value("gemm_tflops") == gemm_before;
  // Written back, the row is there; a file that sets it keeps its value; its range applies.
  const std::string written = to_toml(p);
  ok = ok && contains(written, "\ntrial_share = 0.25\n");
  ok = ok && parse_profile(with_line(written, "trial_share", "trial_share = 0.5"), "set.toml").hw.value("trial_share") == 0.5;
  ok = ok && contains(parse_error(with_line(written, "trial_share", "trial_share = 2")),
                      "[time].trial_share must be a share in [0, 1]");
  std::exit(ok ? 0 : 1);
}

TEST(ProfileRowsTest, AnOptionalRowAddedToTheTableReadsTodaysH200Unchanged) {
  EXPECT_EXIT(add_a_row_and_read_h200(), ::testing::ExitedWithCode(0), "");
}

TEST(ProfileRowsTest, AbsurdRateIsRefusedNamingKeyFileAndPosition) {
  const std::string text = with_line(builtin_text("h200"), "gemm_tflops", "gemm_tflops = 1e-300");
  const std::string msg = parse_error(text);
  EXPECT_TRUE(contains(msg, position_of(text, "gemm_tflops"))) << msg;
  EXPECT_TRUE(contains(msg, "[time].gemm_tflops must be a rate in")) << msg;
  EXPECT_TRUE(contains(msg, "(got 1e-300)")) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // Just inside the bounds is fine; just outside the top is not.
  EXPECT_EQ(parse_error(with_line(text, "gemm_tflops", "gemm_tflops = 1e-6")), "");
  EXPECT_TRUE(contains(parse_error(with_line(text, "gemm_tflops", "gemm_tflops = 1e20")), "[time].gemm_tflops"));
  EXPECT_TRUE(contains(parse_error(with_line(builtin_text("h200"), "memory_gbps", "memory_gbps = 1e-300")), "[time].memory_gbps"));
}

TEST(ProfileRowsTest, MemoryBeyondAnyDeviceIsRefusedNamingKeyAndFile) {
  for (const char* value : {"9223372036854775807", "1125899906842624"}) {
    const std::string text =
        with_line(builtin_text("h200"), "memory_bytes", std::string("memory_bytes = ") + value);
    const std::string msg = parse_error(text);
    EXPECT_TRUE(contains(msg, position_of(text, "memory_bytes"))) << msg;
    EXPECT_TRUE(contains(msg, "[gpu].memory_bytes must be at most 64 TiB")) << msg;
    EXPECT_TRUE(contains(msg, value)) << msg;
  }
}

TEST(ProfileRowsTest, ContextOfAbsurdSizeIsRefusedNamingKeyFileAndPosition) {
  const std::string text = with_line(builtin_text("h200"), "context_bytes", "context_bytes = 1e30");
  const std::string msg = parse_error(text);
  EXPECT_TRUE(contains(msg, position_of(text, "context_bytes"))) << msg;
  EXPECT_TRUE(contains(msg, "[memory].context_bytes must be at most 1 PiB")) << msg;
  EXPECT_TRUE(contains(msg, "(got 1e+30)")) << msg;
  // A stack's own byte counts have the same bound.
  const std::string stack = builtin_text("h200") + "";
  EXPECT_TRUE(contains(parse_error(with_line(stack, "reserved_overhead_bytes", "reserved_overhead_bytes = 1e30")),
                       "reserved_overhead_bytes must be at most 1 PiB"));
}

}  // namespace lorasim::hw
