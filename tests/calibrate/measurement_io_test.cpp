// parse_measurements: out-of-range numbers are a ConfigError naming file:line, never undefined
// behaviour or another exception (regressions found while fuzzing, docs/fuzzing.md); hostile
// files are refused with the place and the reason; saving never clobbers what lies beside.
#include "calibrate/measurement_io.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/error.h"
#include "tests/calibrate/parse_error.h"

namespace lorasim::calib {
namespace {

namespace fs = std::filesystem;

const std::string kHeader = "model,seq_len,micro_batch,step_time_s";

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::path(::testing::TempDir()) / "lorasim-measurements-XXXXXX").string();
    if (::mkdtemp(p.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  size_t size() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
};

std::string read(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

// A file of millions of rows reached 7.7 GB before std::bad_alloc; beyond the bound it is
// refused at the first row too many, naming the bound (here lowered to 3).
TEST(MeasurementIoTest, AFileOfMoreRowsThanTheBoundIsRefusedNamingIt) {
  std::string text = kHeader + "\n# a comment is no row\n";
  for (int b = 1; b <= 4; ++b) text += "tiny,64," + std::to_string(b) + ",0.5\n";
  std::istringstream in(text);
  try {
    parse_measurements(in, "csv", "m.csv", "", 3);
    ADD_FAILURE() << "read more rows than the bound";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "m.csv:6: more than 3 rows, the most lorasim reads of one file: split the file, or keep "
                           "the runs of the workloads at hand");
  }
  std::istringstream three(kHeader + "\ntiny,64,1,0.5\ntiny,64,2,0.5\ntiny,64,4,0.5\n");
  EXPECT_EQ(parse_measurements(three, "csv", "m.csv", "", 3).size(), 3u);
}

TEST(MeasurementIoTest, ParsesCsvRow) {
  const auto rows = parse_measurements("model,seq_len,micro_batch,step_time_s\ntiny,128,2,0.5\n", "csv", "m.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].micro_batch, 2);
}

TEST(MeasurementIoTest, WholeNumberBeyondInt64IsConfigError) {
  EXPECT_THROW(parse_measurements("model,seq_len,micro_batch,step_time_s\ntiny,1e300,1,1\n", "csv", "m.csv"),
               ConfigError);
  EXPECT_THROW(parse_measurements("model,seq_len,micro_batch,step_time_s\ntiny,nan,1,1\n", "csv", "m.csv"),
               ConfigError);
}

TEST(MeasurementIoTest, NonFiniteTimeIsConfigError) {
  EXPECT_THROW(parse_measurements("model,seq_len,micro_batch,step_time_s\ntiny,128,1,inf\n", "csv", "m.csv"),
               ConfigError);
}

TEST(MeasurementIoTest, JsonNumberBeyondDoubleIsConfigError) {
  try {
    parse_measurements("{\"model\": \"tiny\", \"seq_len\": 1e999, \"micro_batch\": 1}\n", "jsonl", "m.jsonl");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("m.jsonl:1:"), std::string::npos) << e.what();
  }
}

TEST(MeasurementIoTest, RepeatedCsvColumnIsRefusedNamingBoth) {
  EXPECT_EQ(parse_error("model,seq_len,micro_batch,seq_len,step_time_s\ntiny,128,1,256,0.5\n", "csv"),
            "m.csv:1: column seq_len appears twice in the header (columns 2 and 4): keep one");
}

TEST(MeasurementIoTest, RepeatedJsonKeyIsRefusedNamingBoth) {
  EXPECT_EQ(parse_error("{\"model\": \"tiny\", \"seq_len\": 128, \"micro_batch\": 1, \"step_time_s\": 0.5, "
                        "\"seq_len\": 256}\n",
                        "jsonl"),
            "m.jsonl:1: key \"seq_len\" appears twice (128, then 256): keep one");
  // A key repeated inside a nested value is not a repeated column (the value is refused anyway).
  EXPECT_EQ(parse_error("{\"model\": \"tiny\", \"seq_len\": 128, \"precision\": {\"a\": 1, \"a\": 2}}\n", "jsonl"),
            "m.jsonl:1: a value must be a string, number, boolean or null, got {\"a\":2}");
}

TEST(MeasurementIoTest, NegativeMemoryOrTimeIsRefusedWithItsPlace) {
  EXPECT_EQ(parse_error(kHeader + ",peak_reserved_bytes\ntiny,128,1,0.5,1e9\ntiny,128,2,0.5,-5\n", "csv"),
            "m.csv:3: column peak_reserved_bytes: expected a number >= 0, got '-5'");
  EXPECT_EQ(parse_error("{\"model\": \"tiny\", \"seq_len\": 128, \"micro_batch\": 1, \"step_time_s\": 0.5, "
                        "\"host_time_s\": -0.25}\n",
                        "jsonl"),
            "m.jsonl:1: column host_time_s: expected a number >= 0, got '-0.25'");
  EXPECT_EQ(parse_error(kHeader + ",oom\ntiny,128,1,-1,true\n", "csv"),
            "m.csv:2: column step_time_s: expected a number >= 0, got '-1'");
}

TEST(MeasurementIoTest, ADirectoryIsSaidToBeOne) {
  TempDir dir;
  fs::create_directory(dir / "runs.csv");
  try {
    load_measurements(dir / "runs.csv");
    FAIL() << "read a directory";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "measurements '" + (dir / "runs.csv") + "' is a directory: give a .csv or .jsonl file");
  }
}

TEST(MeasurementIoTest, CsvHeaderErrorsPointAtTheHeaderLine) {
  EXPECT_EQ(parse_error("modle,seq_len,micro_batch,step_time_s\ntiny,128,1,0.5\n", "csv"),
            "m.csv:1: unknown column 'modle' (see docs/measurements.md)");
  EXPECT_EQ(parse_error("# runs on the H200\nseq_len,micro_batch,step_time_s\n128,1,0.5\n", "csv"),
            "m.csv:2: missing required column model");
}

TEST(MeasurementIoTest, CsvMayStartWithAUtf8ByteOrderMark) {
  const auto rows = parse_measurements("\xEF\xBB\xBF" + kHeader + "\ntiny,128,2,0.5\n", "csv", "m.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].micro_batch, 2);
  EXPECT_EQ(rows[0].step_time_s, 0.5);
}

TEST(MeasurementIoTest, SavingUnderANameFitCannotReadIsRefusedBeforeAnything) {
  EXPECT_THROW(check_measurements_output("runs.txt"), InputError);
  EXPECT_THROW(check_measurements_output("runs.jsonl"), InputError);  // the writer writes CSV
  EXPECT_NO_THROW(check_measurements_output("dir/runs.csv"));
  TempDir dir;
  const auto rows = parse_measurements(kHeader + "\ntiny,128,2,0.5\n", "csv", "m.csv");
  EXPECT_THROW(write_measurements_csv(rows, dir / "r.txt"), InputError);
  EXPECT_EQ(dir.size(), 0u);
}

// Issue 10 item 2: the writer used runs.csv.tmp, followed a symlink there and destroyed a file
// of that name.
TEST(MeasurementIoTest, SavingNeverFollowsOrReplacesAFileAtTheOldTemporaryName) {
  TempDir dir;
  std::ofstream(dir / "victim") << "victim\n";
  fs::create_symlink(dir / "victim", dir / "runs.csv.tmp");
  const auto rows = parse_measurements(kHeader + "\ntiny,128,2,0.5\n", "csv", "m.csv");
  write_measurements_csv(rows, dir / "runs.csv");
  EXPECT_EQ(read(dir / "victim"), "victim\n");
  EXPECT_TRUE(fs::is_symlink(dir / "runs.csv.tmp"));
  EXPECT_FALSE(fs::is_symlink(dir / "runs.csv"));
  EXPECT_EQ(dir.size(), 3u);
  const auto back = load_measurements(dir / "runs.csv");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].micro_batch, 2);
}

}  // namespace
}  // namespace lorasim::calib
