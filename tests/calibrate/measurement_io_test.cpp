// parse_measurements: out-of-range numbers are a ConfigError naming file:line, never undefined
// behaviour or another exception (regressions found while fuzzing, docs/fuzzing.md).
#include "calibrate/measurement_io.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace lorasim::calib {
namespace {

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

}  // namespace
}  // namespace lorasim::calib
