// The conversions between the runner's, the fitter's and a profile's plain structs, in one
// place so that `calibrate`, `validate` and `fit` (and library users) agree on them.
// Torch-free: it reads the measured run (calibrate/measured_run.h), never the runner.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measured_run.h"
#include "calibrate/measurement.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::calib {

/// What a run of `w` measured, as a measurement row; an out-of-memory run keeps every
/// figure not measured.
Measurement to_measurement(const model::Workload& w, const RunResult& r);

/// Records on every row the device it ran on, as rows name devices (docs/measurements.md):
/// the GPU's name, or "cpu" whatever the CPU's model; `memory_bytes` <= 0 leaves it unrecorded.
/// The runner is one process.
void set_device(std::vector<Measurement>& rows, const std::string& device, bool is_gpu, double memory_bytes);

/// The lowest relative errors a fitted profile claims: a fit's residuals over a few runs
/// understate what other workloads will see.
inline constexpr double kMinExpectedTimeError = 0.05;
inline constexpr double kMinExpectedMemoryError = 0.02;

/// A calibration's step times fit within a few percent when the machine is quiet (the committed
/// H200 runs: 1-5% rms); beyond 15% -- three times the floor above, and a profile claiming 30%
/// ranges -- the timings themselves were noisy, and a quiet rerun helps more than the fit can.
inline constexpr double kLargeTimeResidual = 0.15;

/// "" when the fit's step-time rms residual is at most kLargeTimeResidual; else one line (no
/// "warning: ") with the residual and its likely cause: the CPU's threads or a busy host, and
/// too few timed steps when `measure_steps` (0: not known) is below 5.
std::string residual_warning(const FitReport& fit, bool on_cpu, int64_t measure_steps);

/// Sets `hw`'s expected time and memory errors from a fit: twice the RMS residual, with the
/// floors above, until `lorasim validate` says otherwise.
void set_expected_errors(model::HardwareModel& hw, const FitReport& fit);

}  // namespace lorasim::calib
