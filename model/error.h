// Error types thrown by lorasim's libraries. main() maps each class to its own
// exit code; libraries never exit() or assert on user input.
#pragma once
#include <stdexcept>
#include <cstddef>
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

/// `text` as a message quotes it: in single quotes, at most `max_bytes` of it (then "..." and
/// its size), control bytes, quotes and bytes above 0x7e escaped as \xNN. A message holding
/// the input whole could be megabytes long, raw control bytes would drive the terminal, and a
/// NUL would cut the message where what() stops.
std::string quoted_excerpt(const std::string& text, size_t max_bytes = 48);

/// Another library's message (a JSON or TOML parser's, which may quote the input it read) as
/// lorasim prints it: at most `max_bytes`, control bytes escaped as \xNN, "..." where cut.
std::string excerpt(const std::string& text, size_t max_bytes = 240);

/// Returns the candidate nearest to `name` by edit distance, or "" if none is close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace lorasim
