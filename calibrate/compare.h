// Predicted vs measured: per-split signed errors and the summary a user needs to trust a
// profile (mean and max absolute error, whether the recommendation was the fastest).
// Torch-free: used by `validate` on live runs and on measurement files alike.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "calibrate/measurement.h"
#include "simulator/simulate.h"

namespace lorasim::calib {

struct ComparedSplit {
  int64_t micro_batch = 0, accumulation = 0;
  double predicted_step_time_s = 0, measured_step_time_s = kNotMeasured;
  /// The predicted step time's range (sim::Split::step_time_low_s/high_s).
  double predicted_step_time_low_s = 0, predicted_step_time_high_s = 0;
  double predicted_allocated_bytes = 0, measured_allocated_bytes = kNotMeasured;
  double predicted_reserved_bytes = 0, measured_reserved_bytes = kNotMeasured;
  /// The worst case the simulator checks against the memory limit (reserved plus a fresh
  /// process's allocator slack); 0 when not known, and then not summarised.
  double predicted_worst_reserved_bytes = 0;
  bool predicted_fits = true;
  bool measured_oom = false;
  /// The measured peak left the safety margin free (reserved within the usable memory): a
  /// split the recommendation may choose. True when the peak was not measured.
  bool measured_within_margin = true;
  /// Signed relative errors, (predicted - measured) / measured; NaN when not measured.
  double step_time_error() const;
  double allocated_error() const;
  double reserved_error() const;
  /// The measured step time lies within the predicted range; false when not measured.
  bool within_range() const;
};

struct ComparisonSummary {
  int points = 0;                       ///< splits measured without OOM
  double time_mean_abs_err = 0, time_max_abs_err = 0;
  double reserved_mean_abs_err = 0, reserved_max_abs_err = 0;
  double reserved_max_under_err = 0;    ///< largest under-prediction of reserved memory (positive)
  /// The same for the worst case that decides whether a split fits: what an out-of-memory
  /// of a recommended split would take.
  double worst_reserved_max_under_err = 0;
  double allocated_mean_abs_err = 0;
  int memory_points = 0;
  std::optional<size_t> recommended;     ///< fastest predicted among predicted-to-fit
  /// The fastest measured split that left the safety margin free: the best the recommendation
  /// may pick. A faster split whose peak ate into the margin is the user's margin, not a miss.
  std::optional<size_t> fastest_measured;
  std::optional<size_t> fastest_measured_any;  ///< the fastest that ran, margin or not
  bool recommended_was_fastest = false;
  double regret = 0;                    ///< measured(recommended) / measured(fastest) - 1
  double regret_any = 0;                ///< the same against fastest_measured_any
  bool recommended_oom = false;         ///< the recommended split ran out of memory
  int time_range_points = 0;            ///< splits measured without OOM, as `points`
  int time_range_hits = 0;              ///< of those, measured step time within [low, high]
};

/// The split of `prediction` that `measured` ran (same micro-batch), next to what it measured.
/// Throws InputError when the prediction has no such split (another effective batch).
ComparedSplit compare_split(const sim::Result& prediction, const Measurement& measured);

ComparisonSummary summarize(const std::vector<ComparedSplit>& splits);

}  // namespace lorasim::calib
