// Measurement files: timed training runs from any framework (HF Trainer + PEFT, lorasim's
// own runner, ...) as CSV or JSON Lines, one run per row. Schema: docs/measurements.md.
#pragma once
#include <string>
#include <vector>

#include "calibrate/measurement.h"

namespace lorasim::calib {

/// Reads a .csv (header row) or .jsonl/.json (one object per line) file. Throws ConfigError
/// naming file:line and the column for a malformed row, a missing required column, or an
/// unknown model.
std::vector<Measurement> load_measurements(const std::string& path);
/// Parses text in the given format ("csv" or "jsonl"); `source` names it in errors.
std::vector<Measurement> parse_measurements(const std::string& text, const std::string& format,
                                            const std::string& source);

/// Writes rows as CSV with every column (what load_measurements reads back), atomically.
void write_measurements_csv(const std::vector<Measurement>& rows, const std::string& path);

}  // namespace lorasim::calib
