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
/// Below this a peak is no training run's: a process that trains holds its weights (the
/// smallest preset, tiny, holds 250 KiB of them), and the CUDA caching allocator reserves 2 MiB
/// at a time. Such a figure is a unit error (MiB or GiB written as bytes), and a fit would
/// blame the profile for it.
inline constexpr double kMinMeasuredPeakBytes = 64.0 * 1024;  // 64 KiB
/// Below this a time is not one step nor any part of one: one kernel launch alone takes longer.
inline constexpr double kMinMeasuredTimeS = 1e-6;  // 1 µs
/// Above this a time is not one optimizer step (nor a part of one) of a fine-tune.
inline constexpr double kMaxMeasuredTimeS = 24.0 * 3600;  // a day

/// Whether a figure's cell says "not measured": empty, null, or nan in any case (pandas and
/// Python's csv module write nan, NaN or null), so that nan and NaN read alike.
bool not_measured_cell(const std::string& cell);

/// Why the figures of `m` cannot have been measured ("column peak_reserved_bytes: ..."), or
/// "" when they can: a time or peak of 0, outside the bounds above, or more memory allocated
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
