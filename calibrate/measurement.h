// One measured training configuration: the workload, the split, and what was measured.
// Produced by the runner (calibrate/runner.h) or read from a user's measurement file;
// consumed by the fitter and by validation. Torch-free.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "model/padded_widths.h"
#include "model/workload.h"

namespace lorasim::calib {

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
inline bool measured(double v) { return !std::isnan(v); }

struct Measurement {
  model::Workload workload;                 ///< architecture (possibly truncated), LoRA, training
  int64_t micro_batch = 1;
  int64_t accumulation = 1;
  bool oom = false;                         ///< ran out of memory: no figures below
  double step_time_s = kNotMeasured;        ///< whole optimizer step
  double micro_batch_time_s = kNotMeasured; ///< one micro-batch in steady state
  double host_time_s = kNotMeasured;        ///< host dispatch of one micro-batch (device held busy)
  double device_time_s = kNotMeasured;      ///< device execution of one micro-batch
  double optimizer_time_s = kNotMeasured;   ///< AdamW step + zero_grad
  double peak_allocated_bytes = kNotMeasured;
  double peak_reserved_bytes = kNotMeasured;
  std::string loop;  ///< what produced the row: "trainer", "plain", "probe"; empty when not said
  // Data of many lengths (docs/measurements.md): how the run's micro-batches were collated.
  std::string collation;               ///< "fixed" or a --padding spelling; empty when not said
  model::PaddedWidths padded_lengths;  ///< each timed micro-batch's padded width; empty when not recorded
  double real_tokens = kNotMeasured;   ///< mean non-pad tokens per timed micro-batch
};

}  // namespace lorasim::calib
