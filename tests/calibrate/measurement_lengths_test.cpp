// The lengths columns of measurement rows (collation, padded_lengths, real_tokens): read from
// CSV and JSON Lines, each refusal naming file:line and the column, and written back only when
// a row has them.
#include "calibrate/measurement_lengths.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "calibrate/measurement_io.h"
#include "model/error.h"
#include "tests/calibrate/parse_error.h"

namespace lorasim::calib {
namespace {

namespace fs = std::filesystem;

const std::string kHeader = "model,seq_len,micro_batch,accumulation,step_time_s,collation,padded_lengths,real_tokens\n";

std::string csv_error(const std::string& cells) { return parse_error(kHeader + cells + "\n", "csv"); }

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::path(::testing::TempDir()) / "lorasim-lengths-rows-XXXXXX").string();
    if (::mkdtemp(p.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(MeasurementLengthsTest, ReadsTheCollationTheWidthsAndTheRealTokens) {
  const auto rows = parse_measurements(kHeader + "tiny,1024,4,4,0.5,longest,512:3;1024:13,2100.5\n"
                                                 "tiny,128,4,2,0.3,,,\n",
                                       "csv", "m.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].collation, "longest");
  EXPECT_EQ(model::format_padded_widths(rows[0].padded_lengths), "512:3;1024:13");
  EXPECT_EQ(rows[0].real_tokens, 2100.5);
  EXPECT_TRUE(rows[1].collation.empty());
  EXPECT_TRUE(rows[1].padded_lengths.empty());
  EXPECT_FALSE(measured(rows[1].real_tokens));

  const auto j = parse_measurements(
      R"({"model": "tiny", "seq_len": 96, "micro_batch": 2, "step_time_s": 0.1, "collation": "multiple:32", )"
      R"("padded_lengths": "64:2;96:1", "real_tokens": 120})" "\n",
      "jsonl", "m.jsonl");
  EXPECT_EQ(j[0].collation, "multiple:32");
  EXPECT_EQ(model::format_padded_widths(j[0].padded_lengths), "64:2;96:1");
  EXPECT_EQ(j[0].real_tokens, 120);
}

TEST(MeasurementLengthsTest, RefusesMalformedValuesNamingTheLineAndTheColumn) {
  EXPECT_EQ(csv_error("tiny,1024,4,4,0.5,longest,512:3;1024,"),
            "m.csv:2: column padded_lengths: padded lengths: '1024' is not width:count (two positive whole numbers, "
            "e.g. 1024:13)");
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,longest,1024:3;512:1,").find("m.csv:2: column padded_lengths: padded lengths: "
                                                                     "width 512 after 1024"),
            std::string::npos);
  EXPECT_EQ(csv_error("tiny,1000,4,4,0.5,longest,512:3;1024:13,"),
            "m.csv:2: column padded_lengths: its largest width is 1024 but seq_len is 1000 (with padded_lengths, "
            "seq_len is the largest width)");
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,fixed,512:3;1024:13,").find("m.csv:2: column padded_lengths: collation fixed"),
            std::string::npos);
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,shortest,,").find("m.csv:2: column collation: expected fixed or a --padding "
                                                          "form"),
            std::string::npos);
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,longest,,many").find("m.csv:2: column real_tokens: expected a number"),
            std::string::npos);
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,longest,,-3").find("m.csv:2: column real_tokens: expected a number >= 0"),
            std::string::npos);
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,longest,,0").find("m.csv:2: column real_tokens: expected a positive"),
            std::string::npos);
  // 4 rows of a mean width of 608 hold 2432 tokens; 4 rows of seq_len 128, 512.
  EXPECT_EQ(csv_error("tiny,2048,4,4,0.5,longest,512:15;2048:1,2432"), "");
  EXPECT_EQ(csv_error("tiny,2048,4,4,0.5,longest,512:15;2048:1,2433"),
            "m.csv:2: column real_tokens: 2433 real tokens per micro-batch exceed the 2432 its 4 rows of the mean "
            "padded width hold");
  EXPECT_NE(csv_error("tiny,128,4,4,0.5,,,513").find("exceed the 512 its 4 rows of seq_len hold"), std::string::npos);
  EXPECT_NE(parse_error(R"({"model": "tiny", "seq_len": 96, "micro_batch": 2, "step_time_s": 0.1, )"
                        R"("padded_lengths": "96"})" "\n",
                        "jsonl")
                .find("m.jsonl:1: column padded_lengths: "),
            std::string::npos);
}

TEST(MeasurementLengthsTest, TwoHistogramsOfOneSplitAreTwoRuns) {
  EXPECT_EQ(csv_error("tiny,1024,4,4,0.5,longest,512:3;1024:13,\ntiny,1024,4,4,0.6,longest,1024:16,"), "");
  EXPECT_NE(csv_error("tiny,1024,4,4,0.5,longest,1024:16,\ntiny,1024,4,4,0.6,longest,1024:16,").find("m.csv:3: "),
            std::string::npos);
}

TEST(MeasurementLengthsTest, TheWriterAddsTheColumnsOnlyWhenARowHasThem) {
  TempDir dir;
  const auto fixed = parse_measurements("model,seq_len,micro_batch,step_time_s\ntiny,128,2,0.5\n", "csv", "f.csv");
  write_measurements_csv(fixed, dir / "fixed.csv");
  EXPECT_EQ(first_line(dir / "fixed.csv").find("collation"), std::string::npos);

  const auto rows = parse_measurements(kHeader + "tiny,1024,4,4,0.5,longest,512:3;1024:13,2100.5\n"
                                                 "tiny,128,4,2,0.3,,,\n",
                                       "csv", "m.csv");
  write_measurements_csv(rows, dir / "runs.csv");
  const std::string header = first_line(dir / "runs.csv");
  const std::string tail = ",collation,padded_lengths,real_tokens";
  ASSERT_GE(header.size(), tail.size());
  EXPECT_EQ(header.substr(header.size() - tail.size()), tail);
  const auto back = load_measurements(dir / "runs.csv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].collation, "longest");
  EXPECT_EQ(back[0].padded_lengths, rows[0].padded_lengths);
  EXPECT_EQ(back[0].real_tokens, 2100.5);
  EXPECT_TRUE(back[1].padded_lengths.empty());
  EXPECT_FALSE(measured(back[1].real_tokens));
}

}  // namespace
}  // namespace lorasim::calib
