// Rows no device can have measured, and one run per split in a file: each refused with one
// line naming file:line and the column (or both lines), in CSV and in JSONL alike.
#include "calibrate/measurement_checks.h"

#include <gtest/gtest.h>

#include "calibrate/measurement_io.h"
#include "model/error.h"
#include "tests/calibrate/parse_error.h"

namespace lorasim::calib {
namespace {

const std::string kHeader = "model,seq_len,micro_batch,accumulation,step_time_s,peak_allocated_bytes,peak_reserved_bytes\n";

std::string csv_error(const std::string& rows) { return parse_error(kHeader + rows, "csv"); }

TEST(MeasurementChecksTest, PeakOfZeroBytesIsRefusedWithItsColumn) {
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,1000000,0\n"),
            "m.csv:2: column peak_reserved_bytes: a measured peak of 0 bytes is no measurement: leave the cell "
            "empty when it was not measured");
  EXPECT_EQ(parse_error(R"({"model": "tiny", "seq_len": 64, "micro_batch": 2, "step_time_s": 0.5, "peak_allocated_bytes": 0})",
                        "jsonl"),
            "m.jsonl:1: column peak_allocated_bytes: a measured peak of 0 bytes is no measurement: leave the cell "
            "empty when it was not measured");
  // Not measured stays allowed: an empty cell, null or nan.
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,,\n"), "");
}

TEST(MeasurementChecksTest, TimeOfZeroSecondsIsRefused) {
  const std::string e = parse_error("model,seq_len,micro_batch,step_time_s,micro_batch_time_s\ntiny,64,2,0.5,0\n", "csv");
  EXPECT_EQ(e, "m.csv:2: column micro_batch_time_s: a measured time of 0 s is no measurement: leave the cell empty "
               "when it was not measured");
}

TEST(MeasurementChecksTest, StepOfMoreThanADayIsRefused) {
  EXPECT_EQ(csv_error("tiny,64,2,1,1e300,,\n"),
            "m.csv:2: column step_time_s: 1e+300 s is more than a day: not the time of a training step (is the unit "
            "seconds?)");
  EXPECT_EQ(csv_error("tiny,64,2,1,86400,,\n"), "");  // a day exactly is still a (slow) step
}

TEST(MeasurementChecksTest, PeakAboveWhatADeviceHoldsIsRefused) {
  const double tib = 1024.0 * 1024 * 1024 * 1024;
  EXPECT_EQ(parse_error(R"({"model": "tiny", "seq_len": 64, "micro_batch": 2, "step_time_s": 0.5, "peak_reserved_bytes": )" +
                            std::to_string(static_cast<int64_t>(892 * tib)) + "}",
                        "jsonl"),
            "m.jsonl:1: column peak_reserved_bytes: 892 TiB is more than 16 TiB, more memory than one device has (is "
            "the unit bytes?)");
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,1000000," + std::to_string(static_cast<int64_t>(16 * tib)) + "\n"), "");
}

TEST(MeasurementChecksTest, FiguresBelowWhatAnyRunMeasuresAreRefused) {
  // A time of 1e-300 s or a peak of 1 byte was read, and fit then blamed the builtin profile.
  EXPECT_EQ(csv_error("tiny,64,2,1,1e-300,,\n"),
            "m.csv:2: column step_time_s: 1e-300 s is below 1 µs: no part of a training step is that short (is "
            "the unit seconds?)");
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,,1\n"),
            "m.csv:2: column peak_reserved_bytes: 1 bytes is below 64 KiB, less than any training run holds (is the "
            "unit bytes?)");
  // A subnormal is a number, and as implausible as 1e-300.
  EXPECT_NE(csv_error("tiny,64,2,1,4.9e-324,,\n").find("is below 1 µs"), std::string::npos);
  // At the bounds: a microsecond, 64 KiB.
  EXPECT_EQ(csv_error("tiny,64,2,1,0.000001,65536,65536\n"), "");
}

TEST(MeasurementChecksTest, NanInAnyCaseIsNotMeasuredAndHexIsNoNumber) {
  // nan and NaN read alike (before, nan was "not measured" and NaN "expected a number").
  const std::string h = "model,seq_len,micro_batch,step_time_s\n";
  const std::string want = "m.csv:2: column step_time_s: a positive time is required unless oom is true";
  for (const char* v : {"nan", "NaN", "NAN", "null"}) EXPECT_EQ(parse_error(h + "tiny,64,2," + v + "\n", "csv"), want) << v;
  // stod read 0x1p-1 as 0.5; no other number lorasim reads is hex.
  EXPECT_EQ(parse_error(h + "tiny,64,2,0x1p-1\n", "csv"), "m.csv:2: column step_time_s: expected a number, got '0x1p-1'");
  EXPECT_EQ(parse_error(h + "tiny,64,2,inf\n", "csv"), "m.csv:2: column step_time_s: expected a number, got 'inf'");
}

TEST(MeasurementChecksTest, AllocatedAboveReservedIsRefused) {
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,2147483648,1073741824\n"),
            "m.csv:2: column peak_allocated_bytes: 2 GiB allocated is more than the 1 GiB reserved "
            "(peak_reserved_bytes), and an allocator reserves at least what it hands out: are the two columns "
            "swapped?");
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,1073741824,1073741824\n"), "");  // the CPU: reserved = allocated
}

TEST(MeasurementChecksTest, ConflictingRowsOfOneSplitNameBothLines) {
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,,\n# a comment line\ntiny,64,4,1,0.9,,\ntiny,64,2,1,0.7,,\n"),
            "m.csv:5: column step_time_s: the same workload and split as line 2 (tiny L=2 s=64 b=2 a=1, lorasim) "
            "measured again, 0.5 s there and 0.7 s here: keep one run of each split in a file");
  EXPECT_EQ(parse_error("{\"model\": \"tiny\", \"seq_len\": 64, \"micro_batch\": 2, \"step_time_s\": 0.5}\n"
                        "{\"model\": \"tiny\", \"seq_len\": 64, \"micro_batch\": 2, \"oom\": true}\n",
                        "jsonl"),
            "m.jsonl:2: column oom: the same workload and split as line 1 (tiny L=2 s=64 b=2 a=1, lorasim) ran out "
            "of memory in one row and not in the other: keep one run of each split in a file");
}

TEST(MeasurementChecksTest, IdenticalRepeatIsRefusedBecauseItWouldCountTwice) {
  EXPECT_EQ(csv_error("tiny,64,2,1,0.5,1000000,2000000\ntiny,64,2,1,0.5,1000000,2000000\n"),
            "m.csv:3: repeats line 2 (tiny L=2 s=64 b=2 a=1, lorasim) exactly: keep one (a repeated row would count "
            "twice in a fit)");
}

TEST(MeasurementChecksTest, RowsDifferingInAnythingThatShapesTheRunAreDifferentRuns) {
  const std::string h = "model,seq_len,micro_batch,accumulation,grad_ckpt,loop,stack,step_time_s\n";
  EXPECT_EQ(parse_error(h + "tiny,64,2,1,false,,,0.5\n"     // the split
                            "tiny,64,1,2,false,,,0.6\n"
                            "tiny,64,2,1,true,,,0.7\n"      // checkpointing
                            "tiny,128,2,1,false,,,0.8\n"    // the sequence length
                            "tiny,64,2,1,false,plain,hf-peft,0.9\n"  // the stack and its loop
                            "tiny,64,2,1,false,trainer,hf-peft,1.0\n",
                        "csv"),
            "");
}

}  // namespace
}  // namespace lorasim::calib
