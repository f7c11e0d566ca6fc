// Error types thrown by lorasim's libraries. main() maps each class to its own
// exit code; libraries never exit() or assert on user input.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace lorasim {

/// Base class of every error lorasim reports to the user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad value on the command line or in a workload (batch 0, unknown model, ...).
class InputError : public Error {
 public:
  using Error::Error;
};

/// A malformed or invalid file: TOML profile, config.json, measurement file.
/// The message carries the file and, where known, the line.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// Calibration or training failed on the device (not an out-of-memory, which is data).
class CalibrationError : public Error {
 public:
  using Error::Error;
};

/// Returns the candidate nearest to `name` by edit distance, or "" if none is close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace lorasim
