// Measurement files: timed training runs from any framework (HF Trainer + PEFT, lorasim's
// own runner, ...) as CSV or JSON Lines, one run per row. Schema: docs/measurements.md.
#pragma once
#include <cstddef>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate/measurement.h"

namespace lorasim::calib {

/// Reads a .csv (header row) or .jsonl/.json (one object per line) file; a leading UTF-8
/// byte-order mark is skipped. Throws ConfigError naming file:line and the column for a malformed
/// row, an unknown, repeated or missing required column (CSV: at the header's line), a negative
/// time or size, an unknown model, or lengths columns that do not fit the row
/// (calibrate/measurement_run.h).
std::vector<Measurement> load_measurements(const std::string& path);
/// More rows than any real file of runs holds (a tuner's or a grid's: hundreds): each row holds
/// its workload, so beyond this a file is refused rather than read into gigabytes.
inline constexpr size_t kMaxMeasurementRows = 100000;

/// Parses the stream in the given format ("csv" or "jsonl") line by line (model/bounded_read.h:
/// each line at most model::kMaxLineBytes), refusing more than `max_rows` rows; `source` names
/// it in errors. Relative config paths in `model` are looked up in `rows_dir`
/// (load_measurements: the file's directory; empty: the working directory).
std::vector<Measurement> parse_measurements(std::istream& in, const std::string& format, const std::string& source,
                                            const std::string& rows_dir, size_t max_rows = kMaxMeasurementRows);
/// The same, of text.
inline std::vector<Measurement> parse_measurements(const std::string& text, const std::string& format,
                                                   const std::string& source, const std::string& rows_dir = "") {
  std::istringstream in(text);
  return parse_measurements(in, format, source, rows_dir);
}

/// Throws InputError unless `path` ends in .csv, the format write_measurements_csv writes (and
/// load_measurements reads by that name). Call it before measuring, so a bad name costs nothing.
void check_measurements_output(const std::string& path);

/// Writes rows as CSV with every column (the lengths columns only when a row has one; what
/// load_measurements reads back) through
/// model::write_file_atomically. Throws InputError for a name check_measurements_output refuses,
/// ConfigError when the file cannot be written.
void write_measurements_csv(const std::vector<Measurement>& rows, const std::string& path);

}  // namespace lorasim::calib
