#include "cli/split_charts.h"

#include <algorithm>
#include <cmath>

#include "cli/describe.h"
#include "cli/format.h"

namespace lorasim::cli {
namespace {

std::string title(const model::Workload& w, int64_t effective_batch, const hw::Profile& p) {
  return w.arch.name + ", seq len " + std::to_string(w.train.seq_len) + ", effective batch " +
         std::to_string(effective_batch) + " on " + p.hw.display_name;
}

std::string split_label(int64_t micro_batch, int64_t accumulation) {
  return std::to_string(micro_batch) + " x " + std::to_string(accumulation);
}

/// The raw limit and what the fit test compares with: the limit less the margin and the context.
std::vector<PlotLimit> limits(const sim::Result& r) {
  return {{"limit " + human_bytes(r.memory_limit_bytes), r.memory_limit_bytes, false},
          {"usable " + human_bytes(r.usable_memory_bytes), r.usable_memory_bytes, true}};
}

double or_nan(double v) { return calib::measured(v) ? v : std::nan(""); }

}  // namespace

SplitChart simulation_chart(const sim::Request& request, const hw::Profile& profile, const sim::Result& result) {
  SplitChart c;
  // --grad-ckpt auto: each split twice, the checkpointed one labelled so.
  const bool both = std::any_of(result.splits.begin(), result.splits.end(),
                                [&](const sim::Split& s) { return s.grad_ckpt != result.splits.front().grad_ckpt; });
  c.title = title(request.workload, request.effective_batch, profile);
  c.subtitle =
      workload_line(request.workload, both) + "\n" + request.workload.stack.describe() + " on " + profile_line(profile);
  PlotSeries time{"predicted", {}, {}}, memory{"predicted", {}, {}};
  for (const sim::Split& s : result.splits) {
    c.split_labels.push_back(split_label(s.micro_batch, s.accumulation) + (both && s.grad_ckpt ? " ckpt" : ""));
    time.values.push_back(s.step_time_s);
    memory.values.push_back(s.peak_reserved_bytes);
    c.fits.push_back(s.fits);
  }
  c.step_time_s = {time};
  c.peak_reserved_bytes = {memory};
  c.memory_limits = limits(result);
  c.recommended = result.recommended;
  return c;
}

SplitChart comparison_chart(const model::Workload& workload, int64_t effective_batch, const hw::Profile& profile,
                            const sim::Result& predicted, const std::vector<calib::ComparedSplit>& rows,
                            const std::string& measured_where) {
  SplitChart c;
  c.title = title(workload, effective_batch, profile);
  c.subtitle = workload_line(workload) + "\n" + workload.stack.describe() + " predicted by " + profile_line(profile) +
               ", " + measured_where;
  PlotSeries pred_time{"predicted", {}, {}}, meas_time{"measured", {}, {}};
  PlotSeries pred_mem{"predicted", {}, {}}, meas_mem{"measured", {}, {}};
  for (const calib::ComparedSplit& r : rows) {
    c.split_labels.push_back(split_label(r.micro_batch, r.accumulation));
    c.fits.push_back(r.predicted_fits);
    pred_time.values.push_back(r.predicted_step_time_s);
    pred_mem.values.push_back(r.predicted_reserved_bytes);
    meas_time.values.push_back(r.measured_oom ? std::nan("") : or_nan(r.measured_step_time_s));
    meas_mem.values.push_back(r.measured_oom ? std::nan("") : or_nan(r.measured_reserved_bytes));
    meas_time.oom.push_back(r.measured_oom);
    meas_mem.oom.push_back(r.measured_oom);
  }
  c.step_time_s = {pred_time, meas_time};
  c.peak_reserved_bytes = {pred_mem, meas_mem};
  c.memory_limits = limits(predicted);
  c.recommended = calib::summarize(rows).recommended;
  return c;
}

}  // namespace lorasim::cli
