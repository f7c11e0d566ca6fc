// What a measurement row must satisfy beyond its format: figures a real device can have
// produced, and one run per workload and split in a file. measurement_io.cpp applies both to
// every row it reads; the messages name the column or the other line, not the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "calibrate/measurement.h"

namespace lorasim::calib {

/// Above this a peak is not one device's memory (the largest accelerators hold a few hundred
/// GiB): a unit error or a broken recorder.
inline constexpr double kMaxMeasuredPeakBytes = 16.0 * 1024 * 1024 * 1024 * 1024;  // 16 TiB
/// Above this a time is not one optimizer step (nor a part of one) of a fine-tune.
inline constexpr double kMaxMeasuredTimeS = 24.0 * 3600;  // a day

/// Why the figures of `m` cannot have been measured ("column peak_reserved_bytes: ..."), or
/// "" when they can: a time or peak of 0, beyond the bounds above, or more memory allocated
/// than reserved.
std::string implausible_figures(const Measurement& m);

/// The rows of one file, by workload and split. A file holds one run of each: two rows of the
/// same run with different figures leave a fit nothing to choose between, and an exact repeat
/// would count the run twice, so both are refused.
class RowsBySplit {
 public:
  /// Records `m`, read at `line`; returns why it clashes with a row recorded before (naming
  /// that row's line), or "".
  std::string add(const Measurement& m, int64_t line);

 private:
  std::map<std::string, std::pair<int64_t, Measurement>> seen_;  // identity -> first line, row
};

}  // namespace lorasim::calib
