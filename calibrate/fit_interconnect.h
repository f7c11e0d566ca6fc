// The interconnect's two figures from timed all-reduces (calibrate/allreduce_rows.h): the ring
// model of simulator/data_parallel.h, time = latency x 2(N-1) + 2(N-1)/N x bytes / bandwidth,
// is linear in (latency, 1 / bandwidth), fitted by non-negative least squares on relative
// errors, since the sizes span five decades. Torch-free (Eigen).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/allreduce_rows.h"
#include "model/hardware.h"

namespace lorasim::calib {

struct InterconnectFit {
  double allreduce_latency_s = 0;  ///< per ring step
  double allreduce_gbps = 0;       ///< bus bandwidth, GB/s (1e9 bytes/s)
  double rms_rel_error = 0;        ///< of the fitted times against the rows
  double max_rel_error = 0;
  int64_t rows = 0;
  int64_t min_bytes = 0, max_bytes = 0;
};

/// Throws CalibrationError when the rows cannot separate the two figures (fewer than two sizes)
/// or give no bandwidth (the time does not grow with the size), ConfigError for rows of
/// different backends or devices.
InterconnectFit fit_interconnect(const std::vector<AllreduceRow>& rows);

/// The ring model's time for one all-reduce of `bytes` among `processes` (the fit's prediction).
double ring_time_s(const InterconnectFit& fit, int64_t processes, int64_t bytes);

/// The profile's [interconnect] for the fit. The link kind: gloo-cpu for rows measured by Gloo on
/// the CPU (whatever `declared` says: CPU figures are no GPU link), else `declared`. `source`
/// says how it was measured.
model::Interconnect to_interconnect(const InterconnectFit& fit, const std::vector<AllreduceRow>& rows,
                                    model::Link declared, const std::string& source);

}  // namespace lorasim::calib
