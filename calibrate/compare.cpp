#include "calibrate/compare.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/error.h"

namespace lorasim::calib {
namespace {
double rel(double predicted, double measured_v) {
  return measured(measured_v) && measured_v > 0 ? predicted / measured_v - 1 : kNotMeasured;
}
}  // namespace

double ComparedSplit::step_time_error() const { return rel(predicted_step_time_s, measured_step_time_s); }
double ComparedSplit::allocated_error() const { return rel(predicted_allocated_bytes, measured_allocated_bytes); }
double ComparedSplit::reserved_error() const { return rel(predicted_reserved_bytes, measured_reserved_bytes); }
bool ComparedSplit::within_range() const {
  return !measured_oom && measured(measured_step_time_s) && measured_step_time_s >= predicted_step_time_low_s &&
         measured_step_time_s <= predicted_step_time_high_s;
}

ComparedSplit compare_split(const sim::Result& prediction, const Measurement& m) {
  const sim::Split* p = nullptr;
  for (const auto& s : prediction.splits)
    if (s.micro_batch == m.micro_batch) p = &s;
  if (!p)
    throw InputError("split " + std::to_string(m.micro_batch) + "x" + std::to_string(m.accumulation) +
                     " is not a split of the predicted effective batch");
  ComparedSplit c;
  c.micro_batch = m.micro_batch;
  c.accumulation = m.accumulation;
  c.predicted_step_time_s = p->step_time_s;
  c.predicted_step_time_low_s = p->step_time_low_s;
  c.predicted_step_time_high_s = p->step_time_high_s;
  c.predicted_allocated_bytes = p->peak_allocated_bytes;
  c.predicted_reserved_bytes = p->peak_reserved_bytes;
  c.predicted_worst_reserved_bytes = p->worst_reserved_bytes;
  c.predicted_fits = p->fits;
  c.measured_oom = m.oom;
  c.measured_step_time_s = m.step_time_s;
  c.measured_allocated_bytes = m.peak_allocated_bytes;
  c.measured_reserved_bytes = m.peak_reserved_bytes;
  c.measured_within_margin = !measured(m.peak_reserved_bytes) || m.peak_reserved_bytes <= prediction.usable_memory_bytes;
  return c;
}

ComparisonSummary summarize(const std::vector<ComparedSplit>& s) {
  ComparisonSummary out;
  double alloc_sum = 0;
  int alloc_n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const ComparedSplit& c = s[i];
    if (c.predicted_fits &&
        (!out.recommended || c.predicted_step_time_s < s[*out.recommended].predicted_step_time_s))
      out.recommended = i;
    if (c.measured_oom || !measured(c.measured_step_time_s)) continue;
    const auto faster = [&](const std::optional<size_t>& best) {
      return !best || c.measured_step_time_s < s[*best].measured_step_time_s;
    };
    if (c.measured_within_margin && faster(out.fastest_measured)) out.fastest_measured = i;
    if (faster(out.fastest_measured_any)) out.fastest_measured_any = i;
    const double te = std::fabs(c.step_time_error());
    out.time_mean_abs_err += te;
    out.time_max_abs_err = std::max(out.time_max_abs_err, te);
    ++out.points;
    ++out.time_range_points;
    if (c.within_range()) ++out.time_range_hits;
    if (measured(c.measured_reserved_bytes)) {
      const double re = c.reserved_error();
      out.reserved_mean_abs_err += std::fabs(re);
      out.reserved_max_abs_err = std::max(out.reserved_max_abs_err, std::fabs(re));
      out.reserved_max_under_err = std::max(out.reserved_max_under_err, -re);
      if (c.predicted_worst_reserved_bytes > 0)
        out.worst_reserved_max_under_err = std::max(
            out.worst_reserved_max_under_err, -rel(c.predicted_worst_reserved_bytes, c.measured_reserved_bytes));
      ++out.memory_points;
    }
    if (measured(c.measured_allocated_bytes)) {
      alloc_sum += std::fabs(c.allocated_error());
      ++alloc_n;
    }
  }
  if (out.points) out.time_mean_abs_err /= out.points;
  if (out.memory_points) out.reserved_mean_abs_err /= out.memory_points;
  if (alloc_n) out.allocated_mean_abs_err = alloc_sum / alloc_n;
  if (out.recommended) {
    const ComparedSplit& r = s[*out.recommended];
    out.recommended_oom = r.measured_oom;
    out.recommended_was_fastest = out.fastest_measured && *out.fastest_measured == *out.recommended;
    if (!r.measured_oom && measured(r.measured_step_time_s)) {
      // Against the best the margin allows; a recommended split that itself ate into the margin
      // is measured against the fastest that ran.
      const auto& best = out.fastest_measured ? out.fastest_measured : out.fastest_measured_any;
      if (best) out.regret = std::max(0.0, r.measured_step_time_s / s[*best].measured_step_time_s - 1);
      if (out.fastest_measured_any)
        out.regret_any = r.measured_step_time_s / s[*out.fastest_measured_any].measured_step_time_s - 1;
    }
  }
  return out;
}

}  // namespace lorasim::calib
