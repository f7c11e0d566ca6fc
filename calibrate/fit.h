// Fits a device's cost-model coefficients (model/hardware.h) to measurements with
// non-negative least squares on relative errors, and reports the residuals.
#pragma once
#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "model/hardware.h"

namespace lorasim::calib {

struct Residual {
  std::string label;                       ///< "L=2 s=256 b=4 a=1"
  double predicted_step_time_s = 0, measured_step_time_s = kNotMeasured;
  double predicted_reserved_bytes = 0, measured_reserved_bytes = kNotMeasured;
  double predicted_allocated_bytes = 0, measured_allocated_bytes = kNotMeasured;
};

struct FitReport {
  model::HardwareModel hardware;           ///< the input device with fitted coefficients
  std::vector<Residual> residuals;         ///< one per usable measurement
  double time_rms_rel = 0, time_max_rel = 0;          ///< step time, relative
  double reserved_rms_rel = 0, reserved_max_rel = 0;  ///< peak reserved memory, relative
  double allocated_rms_rel = 0;
  int time_points = 0, memory_points = 0;
};

/// Fits the time and memory coefficients of `base` (whose datasheet figures and overlap
/// mode are kept) to `rows`. Rows that ran out of memory are ignored. Throws
/// CalibrationError when too few usable rows remain to determine the coefficients.
FitReport fit_profile(const std::vector<Measurement>& rows, const model::HardwareModel& base);

/// Residuals of an existing model on rows (for validation and for the report).
std::vector<Residual> residuals(const std::vector<Measurement>& rows, const model::HardwareModel& hw);

}  // namespace lorasim::calib
