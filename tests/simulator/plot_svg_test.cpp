// The --plot renderer on its own data: a well-formed, self-contained SVG with the split labels,
// the limit lines, the recommended marker, the splits that do not fit and the OOM runs.
#include "simulator/plot_svg.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"

namespace {

namespace fs = std::filesystem;
using lorasim::sim::PlotLimit;
using lorasim::sim::PlotSeries;
using lorasim::sim::SplitChart;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

SplitChart three_splits() {
  SplitChart c;
  c.title = "qwen3-1.7b, seq len 512 on NVIDIA H200";
  c.subtitle = "seq 512, bf16\nNVIDIA H200 (calibrated)";
  c.split_labels = {"1 x 4", "2 x 2", "4 x 1"};
  c.step_time_s = {{"predicted", {0.9, 0.5, 0.4}, {}}};
  c.peak_reserved_bytes = {{"predicted", {10 * kGiB, 20 * kGiB, 40 * kGiB}, {}}};
  c.memory_limits = {{"limit 32.00 GiB", 32 * kGiB, false}, {"usable 29.00 GiB", 29 * kGiB, true}};
  c.fits = {true, true, false};
  c.recommended = 1;
  return c;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// A small XML check: every element closes in order, attributes are quoted, and text holds no
/// raw '<' and no '&' that does not start an entity. Returns "" when well formed.
std::string xml_problem(const std::string& x) {
  std::vector<std::string> open;
  size_t i = 0;
  if (x.rfind("<?xml", 0) == 0) i = x.find("?>") + 2;
  while (i < x.size()) {
    if (x[i] == '&') {
      const size_t semi = x.find(';', i);
      const std::string entity = x.substr(i, semi == std::string::npos ? 8 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&apos;")
        return "bad entity " + entity + " at " + std::to_string(i);
    }
    if (x[i] != '<') {
      ++i;
      continue;
    }
    const bool closing = x[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < x.size() && (std::isalnum(static_cast<unsigned char>(x[j])) || x[j] == '-' || x[j] == ':')) ++j;
    const std::string name = x.substr(name_start, j - name_start);
    if (name.empty()) return "raw '<' at " + std::to_string(i);
    char quote = 0;
    for (; j < x.size() && (quote || x[j] != '>'); ++j) {
      if (quote && x[j] == '<') return "'<' in an attribute of <" + name + ">";
      if (x[j] == '"' || x[j] == '\'') quote = quote == x[j] ? 0 : (quote ? quote : x[j]);
    }
    if (j >= x.size()) return "unterminated <" + name;
    const bool self_closing = x[j - 1] == '/';
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
    }
    i = j + 1;
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

TEST(PlotSvgTest, IsWellFormedAndSelfContained) {
  const std::string svg = lorasim::sim::render_svg({three_splits()});
  EXPECT_EQ(xml_problem(svg), "") << svg.substr(0, 2000);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg "), 1u);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  // Self-contained: nothing fetched, nothing run.
  for (const char* external : {"<script", "@import", "href=", "url(http", "<image", "@font-face"})
    EXPECT_EQ(svg.find(external), std::string::npos) << external;
}

TEST(PlotSvgTest, ShowsTheSplitLabelsTitleAndBothSubtitleLines) {
  const std::string svg = lorasim::sim::render_svg({three_splits()});
  for (const char* label : {"1 x 4", "2 x 2", "4 x 1"}) EXPECT_EQ(count(svg, std::string(">") + label + "<"), 2u) << label;
  EXPECT_NE(svg.find(">qwen3-1.7b, seq len 512 on NVIDIA H200<"), std::string::npos);
  EXPECT_NE(svg.find(">seq 512, bf16<"), std::string::npos);
  EXPECT_NE(svg.find(">NVIDIA H200 (calibrated)<"), std::string::npos);
  EXPECT_NE(svg.find("step time (s)"), std::string::npos);
  EXPECT_NE(svg.find("peak reserved (GiB)"), std::string::npos);
}

TEST(PlotSvgTest, DrawsTheLimitLinesTheRecommendedMarkerAndTheSplitsThatDoNotFit) {
  const std::string svg = lorasim::sim::render_svg({three_splits()});
  EXPECT_NE(svg.find(">limit 32.00 GiB<"), std::string::npos);
  EXPECT_NE(svg.find(">usable 29.00 GiB<"), std::string::npos);
  EXPECT_EQ(count(svg, "stroke-dasharray"), 1u) << "the usable line, and only it, is dashed";
  EXPECT_NE(svg.find(">recommended<"), std::string::npos);
  EXPECT_NE(svg.find("font-weight=\"bold\" fill=\"#2a8a3a\">2 x 2<"), std::string::npos) << "the recommended x label";
  EXPECT_NE(svg.find(">does not fit<"), std::string::npos);
  EXPECT_GE(count(svg, "url(#lorasim-hatch)"), 3u) << "the legend swatch and the 4 x 1 bars";

  SplitChart all_fit = three_splits();
  all_fit.fits = {};
  all_fit.recommended.reset();
  const std::string plain = lorasim::sim::render_svg({all_fit});
  EXPECT_EQ(plain.find("does not fit"), std::string::npos);
  EXPECT_EQ(plain.find("recommended"), std::string::npos);
  EXPECT_EQ(plain.find("url(#lorasim-hatch)"), std::string::npos);
}

TEST(PlotSvgTest, MeasuredBesidePredictedHasALegendAndMarksOom) {
  SplitChart c = three_splits();
  const double nan = std::nan("");
  c.step_time_s.push_back({"measured", {1.0, 0.45, nan}, {false, false, true}});
  c.peak_reserved_bytes.push_back({"measured", {11 * kGiB, 19 * kGiB, nan}, {false, false, true}});
  const std::string svg = lorasim::sim::render_svg({c});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find(">predicted<"), std::string::npos);
  EXPECT_NE(svg.find(">measured<"), std::string::npos);
  EXPECT_EQ(count(svg, ">OOM<"), 2u) << "one per panel";
}

TEST(PlotSvgTest, StepTimeAxisIsLogarithmicOnlyBeyondTwentyfold) {
  SplitChart c = three_splits();
  EXPECT_EQ(lorasim::sim::render_svg({c}).find("log scale"), std::string::npos);
  c.step_time_s[0].values = {3.0, 0.3, 0.01};
  const std::string svg = lorasim::sim::render_svg({c});
  EXPECT_NE(svg.find("step time (s), log scale"), std::string::npos);
  for (const char* decade : {">0.01<", ">0.1<", ">1<", ">10<"}) EXPECT_NE(svg.find(decade), std::string::npos) << decade;
}

TEST(PlotSvgTest, EscapesTextSoModelPathsCannotBreakTheDocument) {
  SplitChart c = three_splits();
  c.title = "/models/<a & b>/\"config\".json 'x'";
  c.split_labels[0] = "1 x 4 <&>";
  const std::string svg = lorasim::sim::render_svg({c});
  EXPECT_EQ(xml_problem(svg), "") << svg.substr(0, 1500);
  EXPECT_NE(svg.find("/models/&lt;a &amp; b&gt;/&quot;config&quot;.json &apos;x&apos;"), std::string::npos);
  EXPECT_EQ(svg.find("<a & b>"), std::string::npos);
}

TEST(PlotSvgTest, XmlEscapeReplacesControlCharactersAndInvalidUtf8) {
  using lorasim::sim::xml_escape;
  EXPECT_EQ(xml_escape("a\x01" "b\x1f"), "a?b?");
  EXPECT_EQ(xml_escape("caf\xc3\xa9 \xe2\x80\x94 ok"), "caf\xc3\xa9 \xe2\x80\x94 ok");
  EXPECT_EQ(xml_escape("bad \xff\xc3"), "bad ??");
  EXPECT_EQ(xml_escape("overlong \xc0\xaf"), "overlong ??");
  EXPECT_EQ(xml_escape("surrogate \xed\xa0\x80"), "surrogate ???");
}

TEST(PlotSvgTest, RejectsASeriesWithoutOneValuePerSplit) {
  SplitChart c = three_splits();
  c.step_time_s[0].values.pop_back();
  EXPECT_THROW(lorasim::sim::render_svg({c}), lorasim::InputError);
  c = three_splits();
  c.recommended = 3;
  EXPECT_THROW(lorasim::sim::render_svg({c}), lorasim::InputError);
  EXPECT_THROW(lorasim::sim::render_svg({}), lorasim::InputError);
}

TEST(PlotSvgTest, StacksOneChartPerGroup) {
  SplitChart second = three_splits();
  second.title = "second workload";
  const std::string svg = lorasim::sim::render_svg({three_splits(), second});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find(">second workload<"), std::string::npos);
  EXPECT_EQ(count(svg, ">recommended<"), 4u) << "a legend entry and a column label per chart";
}

TEST(PlotSvgTest, WriteReplacesTheFileAndLeavesNoTemporary) {
  std::string dir = (fs::path(::testing::TempDir()) / "lorasim-plot-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const fs::path file = fs::path(dir) / "splits.svg";
  std::ofstream(file) << "old";
  lorasim::sim::write_svg({three_splits()}, file.string());
  std::stringstream ss;
  ss << std::ifstream(file).rdbuf();
  EXPECT_EQ(ss.str(), lorasim::sim::render_svg({three_splits()}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_THROW(lorasim::sim::write_svg({three_splits()}, (fs::path(dir) / "absent" / "x.svg").string()),
               lorasim::ConfigError);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

}  // namespace
