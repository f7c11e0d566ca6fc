// The measurement tests' one probe of the parser: what it refuses a text with.
#pragma once
#include <string>

#include "calibrate/measurement_io.h"
#include "model/error.h"

namespace lorasim::calib {

/// The ConfigError message parse_measurements throws for `text`, or "" when it parses.
inline std::string parse_error(const std::string& text, const std::string& format) {
  try {
    parse_measurements(text, format, format == "csv" ? "m.csv" : "m.jsonl");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace lorasim::calib
