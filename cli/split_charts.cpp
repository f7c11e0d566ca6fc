#include "cli/split_charts.h"

#include <algorithm>
#include <cmath>

#include "cli/describe.h"
#include "cli/format.h"

namespace lorasim::cli {
namespace {

std::string title(const model::Workload& w, int64_t effective_batch, const hw::Profile& p) {
  // With a lengths file, seq_len is only the truncation: say how the micro-batches are padded.
  const std::string tokens = w.train.lengths ? "lengths up to " + std::to_string(w.train.seq_len) + ", padding " +
                                                   model::padding_name(w.train.padding)
                                             : "seq len " + std::to_string(w.train.seq_len);
  return w.arch.name + ", " + tokens + ", effective batch " + std::to_string(effective_batch) + " on " +
         p.hw.display_name;
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

SplitChart lengths_chart(const sim::Request& request, const hw::Profile& profile, const sim::LengthsResult& r) {
  SplitChart c = simulation_chart(request, profile, r.result);
  // Beside the mean step, the step 99% of steps stay within; beside the expected peak, the worst
  // micro-batch's need (needed_bytes), which decides `fits`. The panels share one legend, series by series.
  const std::string typical = "mean step, expected peak", tail = "p99 step, worst micro-batch";
  c.step_time_s[0].name = c.peak_reserved_bytes[0].name = typical;
  PlotSeries p99{tail, {}, {}}, worst{tail, {}, {}};
  for (size_t i = 0; i < r.result.splits.size(); ++i) {
    p99.values.push_back(r.lengths.at(i).step_time_p99_s);
    worst.values.push_back(r.result.splits[i].needed_bytes);
  }
  c.step_time_s.push_back(p99);
  c.peak_reserved_bytes.push_back(worst);
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
