// The histogram of padded widths: its text form both ways, each refusal, the counter.
#include "model/padded_widths.h"

#include <gtest/gtest.h>

#include <string>

#include "model/error.h"

using namespace lorasim;
using model::PaddedWidths;

namespace {

std::string refusal(const std::string& text) {
  try {
    model::parse_padded_widths(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PaddedWidthsTest, ParsesAscendingPairsAndFormatsThemBack) {
  const PaddedWidths w = model::parse_padded_widths("512:3;1024:13");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], (model::PaddedWidth{512, 3}));
  EXPECT_EQ(w[1], (model::PaddedWidth{1024, 13}));
  EXPECT_EQ(model::format_padded_widths(w), "512:3;1024:13");
  EXPECT_EQ(model::micro_batch_count(w), 16);
  EXPECT_EQ(model::largest_width_tokens(w), 1024);
  EXPECT_DOUBLE_EQ(model::largest_width_share(w), 13.0 / 16);
  EXPECT_DOUBLE_EQ(model::mean_width_tokens(w), (512.0 * 3 + 1024.0 * 13) / 16);
  EXPECT_EQ(model::format_padded_widths(model::parse_padded_widths("7:1")), "7:1");
}

TEST(PaddedWidthsTest, RefusesWhatIsNotAscendingPositiveWholePairs) {
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
  for (const char* bad : {"512", "512:", ":3", "0:3", "512:0", "-512:3", "512:3.5", "5e2:3", "512:3;", ";512:3",
                          "512:3;;1024:1", " 512:3", "512:3 ", "99999999999999999999:1"})
    EXPECT_NE(refusal(bad).find("is not width:count"), std::string::npos) << bad << ": " << refusal(bad);
  EXPECT_NE(refusal("1024:1;512:3").find("width 512 after 1024: list each width once, ascending"), std::string::npos);
  EXPECT_NE(refusal("512:1;512:3").find("width 512 after 512"), std::string::npos);
}

TEST(PaddedWidthsTest, ValidateRefusesWhatTheParserWouldNot) {
  EXPECT_THROW(model::validate_padded_widths({}), InputError);
  EXPECT_THROW(model::validate_padded_widths({{512, 0}}), InputError);
  EXPECT_THROW(model::validate_padded_widths({{0, 2}}), InputError);
  EXPECT_THROW(model::validate_padded_widths({{1024, 1}, {512, 1}}), InputError);
  EXPECT_NO_THROW(model::validate_padded_widths({{512, 1}, {1024, 1}}));
}

TEST(PaddedWidthsTest, TheCounterKeepsWidthsAscendingWithTheirCounts) {
  model::PaddedWidthCounter c;
  for (int64_t w : {1024, 512, 1024, 64, 512, 1024}) c.add(w);
  EXPECT_EQ(model::format_padded_widths(c.widths()), "64:1;512:2;1024:3");
  EXPECT_THROW(c.add(0), InputError);
  EXPECT_TRUE(model::PaddedWidthCounter{}.widths().empty());
}
