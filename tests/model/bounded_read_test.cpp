// The bounds every input reader shares (model/bounded_read.h), the one number reading
// (model/decimal.h) and the quoting of inputs in messages (model/error.h), at lowered limits.
#include "model/bounded_read.h"

#include <gtest/gtest.h>

#include <sstream>
#include <streambuf>

#include "model/decimal.h"
#include "model/error.h"

namespace lorasim::model {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// An endless stream of one byte, as /dev/zero is: reading it whole never ends.
class Endless : public std::streambuf {
 public:
  explicit Endless(char c) { std::fill(std::begin(buf_), std::end(buf_), c); }
  int_type underflow() override {
    setg(buf_, buf_, buf_ + sizeof buf_);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  char buf_[4096];
};

TEST(BoundedReadTest, LinesComeOneAtATimeWithoutTheirEnds) {
  std::istringstream in("a\r\n\nbc");
  LineReader r(in, "f.csv");
  std::string line;
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "a");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "bc");
  EXPECT_EQ(r.line_number(), 3);
  EXPECT_FALSE(r.next(line));
}

TEST(BoundedReadTest, ALineBeyondTheLimitStopsWithTheLimitNamed) {
  std::istringstream in("12345678\n123456789\n");
  LineReader r(in, "f.csv", 8);
  std::string line;
  EXPECT_TRUE(r.next(line));  // at the limit
  EXPECT_EQ(error_of([&] { r.next(line); }),
            "f.csv:2: a line longer than 8 bytes, the most lorasim reads of one line: is it the right file?");
}

TEST(BoundedReadTest, AnEndlessStreamStopsAtTheLimit) {
  Endless zeros('\0');
  std::istream in(&zeros);
  LineReader r(in, "/dev/zero");
  std::string line;
  EXPECT_EQ(error_of([&] { r.next(line); }),
            "/dev/zero:1: a line longer than 1 MiB, the most lorasim reads of one line: is it the right file?");
  Endless more('{');
  std::istream doc(&more);
  EXPECT_EQ(error_of([&] { read_bounded(doc, "/dev/zero", "a profile", 4096); }),
            "/dev/zero: larger than 4 KiB, the most lorasim reads of a profile: is it the right file?");
}

TEST(BoundedReadTest, ADocumentWithinTheLimitIsReadWhole) {
  std::istringstream in(std::string(4096, 'x'));
  EXPECT_EQ(read_bounded(in, "p.toml", "a profile", 4096).size(), 4096u);
}

TEST(BoundedReadTest, JsonDepthCountsBracketsOutsideStrings) {
  EXPECT_EQ(json_too_deep("{\"a\": [[1]]}", 3), "");
  EXPECT_EQ(json_too_deep("{\"a\": [[[1]]]}", 3),
            "nested more than 3 levels deep (at byte 9): no config or measurement nests so deep");
  // Brackets in strings, escaped quotes included, are text.
  EXPECT_EQ(json_too_deep(R"({"a": "[[[[\"[[[[", "b": [1]})", 2), "");
  EXPECT_EQ(json_too_deep("[]]]]][[", 2), "");  // malformed: the parser's to report, and no deeper than 2
}

TEST(DecimalTest, OnlyDecimalNumbersAreNumbers) {
  EXPECT_EQ(parse_decimal("16"), 16.0);
  EXPECT_EQ(parse_decimal("-1.5e3"), -1500.0);
  EXPECT_EQ(parse_decimal(".5"), 0.5);
  EXPECT_EQ(parse_decimal("5."), 5.0);
  EXPECT_GT(*parse_decimal("4.9e-324"), 0.0);  // a subnormal is a number; its range is the caller's
  for (const char* t : {"0x10", "0x1p-2", "nan", "NaN", "inf", "-infinity", " 5", "5 ", "", "e5", ".", "1e", "1e+"})
    EXPECT_FALSE(parse_decimal(t).has_value()) << t;
  double v = 0;
  EXPECT_EQ(leading_decimal("24GiB", v), 2u);
  EXPECT_EQ(v, 24.0);
  EXPECT_EQ(leading_decimal("1.5e9", v), 5u);
  EXPECT_EQ(leading_decimal("2e", v), 1u);  // "2E" would be read as bytes with an exponent of nothing
  EXPECT_EQ(leading_decimal("0x10GiB", v), 1u);
}

TEST(QuotedExcerptTest, ShortTextIsQuotedAsIs) { EXPECT_EQ(quoted_excerpt("qwen3-8b"), "'qwen3-8b'"); }

TEST(QuotedExcerptTest, ControlBytesQuotesAndNulAreEscaped) {
  EXPECT_EQ(quoted_excerpt(std::string("a\x1b[2J\0b'\\\xff", 10)), "'a\\x1b[2J\\x00b\\x27\\x5c\\xff'");
}

TEST(QuotedExcerptTest, LongTextIsCutAndItsSizeGiven) {
  EXPECT_EQ(quoted_excerpt(std::string(50000000, 'x'), 4), "'xxxx...' (50000000 bytes)");
  EXPECT_EQ(excerpt(std::string("line\nnext\xc2\xb5"), 100), "line\\x0anext\xc2\xb5");  // UTF-8 kept
  EXPECT_EQ(excerpt("abcdef", 3), "abc...");
}

TEST(NearestNameTest, AHugeNameCostsNothingAndGetsNoSuggestion) {
  EXPECT_EQ(nearest_name(std::string(10000000, 'f') + "it", {"fit", "validate"}), "");
  EXPECT_EQ(nearest_name("efective-batch", {"effective-batch", "seq-len"}), "effective-batch");
}

}  // namespace
}  // namespace lorasim::model
