// Fits a device's cost-model coefficients (model/hardware.h) to measurements with
// non-negative least squares on relative errors, and reports the residuals.
#pragma once
#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "model/hardware.h"

namespace lorasim::calib {

struct Residual {
  std::string label;                       ///< run_label: "qwen3-1.7b L=2 s=256 b=4 a=1"
  double predicted_step_time_s = 0, measured_step_time_s = kNotMeasured;
  double predicted_reserved_bytes = 0, measured_reserved_bytes = kNotMeasured;
  double predicted_allocated_bytes = 0, measured_allocated_bytes = kNotMeasured;
};

/// How fit_profile treats the base profile's coefficients.
enum class FitMode {
  full,       ///< refit every coefficient the rows can move (the calibration runner's rows)
  anchored,   ///< scale groups of the base's coefficients, only those the rows identify
  automatic,  ///< full when the rows identify the full model (identifies_full_model), else anchored
};

/// One group of an anchored fit (calibrate/fit_anchored.cpp lists them): its coefficients
/// are the base's times `scale` (rates divided by it).
struct GroupScale {
  std::string group;   ///< "host", "device", "activations", "saved", "workspace", "reserved", ...
  double scale = 1.0;  ///< 1 when not identified
  bool identified = false;
  std::string why;     ///< one line: why it moved or why the rows could not move it
};

/// A coefficient whose value the fit changed.
struct MovedCoefficient {
  std::string name;  ///< the profile key
  double before = 0, after = 0;
};

struct FitReport {
  /// The stack the rows were of: lorasim's runner (the GPU half was fitted) or hf-peft (the
  /// base's [stack.hf-peft] terms were, and the GPU half is the base's).
  model::StackKind stack = model::StackKind::lorasim;
  model::HardwareModel hardware;           ///< the input device with fitted coefficients
  std::vector<Residual> residuals;         ///< one per usable measurement
  double time_rms_rel = 0, time_max_rel = 0;          ///< step time, relative
  double reserved_rms_rel = 0, reserved_max_rel = 0;  ///< peak reserved memory, relative
  double allocated_rms_rel = 0;
  int time_points = 0, memory_points = 0;
  bool anchored = false;                   ///< anchored on the base (FitMode) rather than refitted
  std::vector<GroupScale> scales;          ///< anchored: every group, identified or not
  std::vector<MovedCoefficient> moved;     ///< every coefficient that differs from the base's
  /// The terms of data of many lengths, of the fused head and of a quantized base, each fitted
  /// by its own step: one line per term fitted or kept (calibrate/fit_shapes.cpp, fit_quant.cpp).
  std::vector<std::string> shape_notes;
};

/// Fits the time and memory coefficients of `base` (whose datasheet figures and overlap
/// mode are kept) to `rows`. Rows that ran out of memory are ignored. Throws
/// CalibrationError when too few usable rows remain to determine the coefficients.
FitReport fit_profile(const std::vector<Measurement>& rows, const model::HardwareModel& base,
                      FitMode mode = FitMode::full);

/// Whether `rows` identify every coefficient the full fit moves: host and device measured
/// apart (the calibration runner's rows) on enough rows at two or more operator counts.
bool identifies_full_model(const std::vector<Measurement>& rows);

/// Residuals of an existing model on rows (for validation and for the report).
std::vector<Residual> residuals(const std::vector<Measurement>& rows, const model::HardwareModel& hw);

}  // namespace lorasim::calib
