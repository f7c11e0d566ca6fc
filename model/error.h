// Error types thrown by lorasim's libraries. main() maps each class to its own
// exit code; libraries never exit() or assert on user input.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lorasim {

/// Base class of every error lorasim reports to the user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  /// `quantity`: the machine key of the value at fault ("seq_len", "device"), in the library's
  /// words; a front end maps it to its own name for that value (the CLI: a flag).
  Error(const std::string& what, std::string quantity) : std::runtime_error(what), quantity_(std::move(quantity)) {}
  const std::string& quantity() const { return quantity_; }

 private:
  std::string quantity_;
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
