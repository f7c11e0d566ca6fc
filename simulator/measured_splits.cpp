// Measured splits replacing the prediction (simulator/measured_splits.h).
#include "simulator/measured_splits.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/error.h"

namespace lorasim::sim {
namespace {

std::string split_name(const MeasuredSplit& m) {
  return std::to_string(m.micro_batch) + "x" + std::to_string(m.accumulation);
}

bool positive(const std::optional<double>& v) { return !v || (std::isfinite(*v) && *v > 0); }

}  // namespace

void check_measured(const std::vector<MeasuredSplit>& runs, int64_t effective_batch) {
  for (const MeasuredSplit& m : runs) {
    if (m.micro_batch < 1 || m.accumulation < 1 || effective_batch % m.micro_batch != 0 ||
        effective_batch / m.micro_batch != m.accumulation)
      throw InputError("measured split " + split_name(m) + " is not a split of the effective batch " +
                       std::to_string(effective_batch));
    if (!m.oom && !(std::isfinite(m.step_time_s) && m.step_time_s > 0))
      throw InputError("measured split " + split_name(m) + " has no positive step time: give its time, or mark it out of memory");
    if (!positive(m.peak_reserved_bytes) || !positive(m.peak_allocated_bytes))
      throw InputError("measured split " + split_name(m) + " has a peak that is not a positive byte count");
  }
}

void apply_measured(const std::vector<MeasuredSplit>& runs, double allocator_bytes, int64_t steps,
                    double tokens_per_step, Split& s) {
  int timed = 0;
  double time_sum = 0;
  std::optional<double> reserved, allocated;
  bool oom = false, any = false;
  for (const MeasuredSplit& m : runs) {
    if (m.micro_batch != s.micro_batch || m.grad_ckpt != s.grad_ckpt) continue;
    any = true;
    if (m.oom) {
      oom = true;
      continue;
    }
    ++timed;
    time_sum += m.step_time_s;
    // The largest peak of the runs: the one a rerun may meet again.
    if (m.peak_reserved_bytes) reserved = std::max(reserved.value_or(0), *m.peak_reserved_bytes);
    if (m.peak_allocated_bytes) allocated = std::max(allocated.value_or(0), *m.peak_allocated_bytes);
  }
  if (!any) return;
  s.measured = true;
  s.measured_oom = oom;
  if (timed) {
    // A measured time is one figure, not a range: the runs themselves are the spread.
    s.step_time_s = s.step_time_low_s = s.step_time_high_s = time_sum / timed;
    s.run_time_s = static_cast<double>(steps) * s.step_time_s;
    s.tokens_per_s = tokens_per_step / s.step_time_s;
  }
  if (reserved) {
    s.peak_reserved_bytes = *reserved;
    // A row without allocated bytes: the allocated peak cannot be above the reserved one.
    s.peak_allocated_bytes = allocated ? *allocated : std::min(s.peak_allocated_bytes, *reserved);
    s.worst_reserved_bytes = *reserved * (1 + kMeasuredPeakRepeatability);
    s.needed_bytes = s.worst_reserved_bytes;
    s.fits = s.needed_bytes <= allocator_bytes;
  } else if (allocated) {
    s.peak_allocated_bytes = *allocated;
  }
  // A run out of memory outweighs a run that fitted: the split sits at the boundary.
  if (oom) s.fits = false;
}

}  // namespace lorasim::sim
