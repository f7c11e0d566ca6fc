// Latency and bus bandwidth from timed all-reduces (fit_interconnect.h).
#include "calibrate/fit_interconnect.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <Eigen/Dense>

#include "calibrate/nnls.h"
#include "model/error.h"

namespace lorasim::calib {

namespace {
// The two regressors of one row: ring steps, and the bytes each rank sends.
double steps(int64_t n) { return 2.0 * static_cast<double>(n - 1); }
double sent_bytes(int64_t n, int64_t bytes) {
  return 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * static_cast<double>(bytes);
}
}  // namespace

double ring_time_s(const InterconnectFit& fit, int64_t processes, int64_t bytes) {
  return fit.allreduce_latency_s * steps(processes) + sent_bytes(processes, bytes) / (fit.allreduce_gbps * 1e9);
}

InterconnectFit fit_interconnect(const std::vector<AllreduceRow>& rows) {
  if (rows.empty()) throw CalibrationError("no all-reduce rows to fit the interconnect to");
  std::set<int64_t> sizes;
  for (const AllreduceRow& r : rows) {
    if (r.backend != rows.front().backend || r.device != rows.front().device)
      throw ConfigError("all-reduce rows of '" + rows.front().backend + "' on '" + rows.front().device + "' and '" +
                        r.backend + "' on '" + r.device + "' mixed: fit one link at a time");
    sizes.insert(r.bytes);
  }
  if (sizes.size() < 2)
    throw CalibrationError("all-reduce rows of one message size cannot separate latency from bandwidth: time "
                           "at least two sizes (e.g. 1 KiB and 64 MiB)");
  // Relative least squares: each row divided by its own time, so a 1 KiB message weighs as much
  // as a 64 MiB one. Unknowns: latency (s) and seconds per byte (1 / bandwidth).
  const auto m = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd A(m, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const AllreduceRow& r = rows[static_cast<size_t>(i)];
    A(i, 0) = steps(r.processes) / r.time_s;
    A(i, 1) = sent_bytes(r.processes, r.bytes) / r.time_s;
  }
  const Eigen::VectorXd x = nnls(A, b);
  if (!(x(1) > 0))
    throw CalibrationError("the timed all-reduces do not get slower with the message size, so they give no "
                           "bandwidth: time larger messages (up to 64 MiB)");
  InterconnectFit fit;
  fit.allreduce_latency_s = x(0);
  fit.allreduce_gbps = 1.0 / x(1) / 1e9;
  fit.rows = m;
  fit.min_bytes = *sizes.begin();
  fit.max_bytes = *sizes.rbegin();
  double sum_sq = 0;
  for (const AllreduceRow& r : rows) {
    const double rel = ring_time_s(fit, r.processes, r.bytes) / r.time_s - 1;
    sum_sq += rel * rel;
    fit.max_rel_error = std::max(fit.max_rel_error, std::abs(rel));
  }
  fit.rms_rel_error = std::sqrt(sum_sq / static_cast<double>(m));
  return fit;
}

model::Interconnect to_interconnect(const InterconnectFit& fit, const std::vector<AllreduceRow>& rows,
                                    model::Link declared, const std::string& source) {
  model::Interconnect ic;
  const bool cpu = !rows.empty() && rows.front().device == "cpu";
  ic.link = cpu ? model::Link::gloo_cpu : declared;
  ic.allreduce_gbps = fit.allreduce_gbps;
  ic.allreduce_latency_s = fit.allreduce_latency_s;
  ic.calibrated = true;
  ic.source = source;
  return ic;
}

}  // namespace lorasim::calib
