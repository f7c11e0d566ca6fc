// The terms of data of many lengths and of TRL's fused LM head, each fitted by its own step after
// the stack's steady-state terms (docs/lengths.md, "Calibrating new shapes and the allocator's
// hold"): new_shape_s from rows that met new shapes, the allocator's varying-shape share and
// bound from their peaks, fused_head_s_per_token from device-bound fused-head rows.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "calibrate/fit_internal.h"
#include "calibrate/measurement_label.h"
#include "model/cost_model.h"

namespace lorasim::calib::detail {
namespace {

bool stack_owns(const char* name, model::StackKind s) { return model::find_coefficient(name)->owned_by(s); }

// The measured micro-batch: the probe's own figure, else the step less its optimizer, per micro-batch.
double measured_micro_batch_s(const Measurement& m) {
  if (measured(m.micro_batch_time_s)) return m.micro_batch_time_s;
  return (m.step_time_s - (measured(m.optimizer_time_s) ? m.optimizer_time_s : 0.0)) / static_cast<double>(m.accumulation);
}

// Rows of one workload and micro-batch share their model error, whatever their accumulation:
// the plan's run and its replay train on the same widths.
std::string workload_key(const Measurement& m) {
  Measurement k = m;
  k.accumulation = 1;
  k.padded_lengths.clear();
  return run_label(k) + "|" + model::allocator_name(m.workload.stack.allocator);
}

// new_shape_s: y_i - p_i = e_g p_i + s n_i (relative to y_i), with one relative model error e_g
// per workload and micro-batch; only rows of a group holding two different counts of new shapes
// tell s from e_g (the plan's run and its replay). Without such a group, the through-zero fit.
void fit_new_shape(const std::vector<Row>& rows, model::StackModel& view, std::vector<std::string>& notes) {
  if (!stack_owns("new_shape_s", view.stack)) return;
  struct Point {
    double y, p, n;
    std::string group;
  };
  std::vector<Point> pts;
  for (const Row& r : rows) {
    if (!varied_widths(r) || !measured(r.m->new_shapes_per_step)) continue;
    pts.push_back({r.m->step_time_s, steady_step_s(r, view), r.m->new_shapes_per_step, workload_key(*r.m)});
  }
  const bool any_varied = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return varied_widths(r); });
  if (!any_varied) return;  // rows of one width say nothing of new shapes
  double max_n = 0;
  for (const Point& q : pts) max_n = std::max(max_n, q.n);
  if (max_n <= 0) {
    notes.push_back("new_shape_s kept: no row of many widths recorded new shapes (new_shapes_per_step)");
    return;
  }
  std::map<std::string, std::pair<double, double>> spread;  // group -> (min n, max n)
  for (const Point& q : pts) {
    auto [it, fresh] = spread.emplace(q.group, std::make_pair(q.n, q.n));
    if (!fresh) it->second = {std::min(it->second.first, q.n), std::max(it->second.second, q.n)};
  }
  std::map<std::string, Eigen::Index> col;  // groups that identify s, each with its error column
  for (const auto& [g, mm] : spread)
    if (mm.second > mm.first) col.emplace(g, static_cast<Eigen::Index>(col.size()) + 1);
  std::vector<const Point*> used;
  for (const Point& q : pts)
    if (col.empty() || col.count(q.group)) used.push_back(&q);
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(used.size()), static_cast<Eigen::Index>(col.size()) + 1);
  Eigen::VectorXd b(A.rows());
  for (Eigen::Index i = 0; i < A.rows(); ++i) {
    const Point& q = *used[static_cast<size_t>(i)];
    A(i, 0) = q.n / q.y;
    if (!col.empty()) A(i, col.at(q.group)) = q.p / q.y;
    b(i) = (q.y - q.p) / q.y;
  }
  const double s = std::max(0.0, A.colPivHouseholderQr().solve(b)(0));
  view.c.new_shape_s = s;
  notes.push_back("new_shape_s " + fixed3(s) + " s from " + std::to_string(used.size()) + " rows of many widths" +
                  (col.empty() ? " (no replay at the same widths: through zero)" : " (runs against their replays)"));
}

// The allocator's hold under varying shapes, per allocator mode: the share each row needed above
// the predicted peak at its widest micro-batch, per byte of that micro-batch's activations.
void fit_varying(const std::vector<Row>& rows, model::StackModel& view, std::vector<std::string>& notes) {
  for (model::AllocatorMode mode : {model::AllocatorMode::default_segments, model::AllocatorMode::expandable}) {
    const bool expandable = mode == model::AllocatorMode::expandable;
    const char* share_name = expandable ? "varying_share_expandable" : "varying_share_default";
    if (!stack_owns(share_name, view.stack)) continue;
    std::vector<double> need;
    for (const Row& r : rows) {
      if (!varied_widths(r) || r.m->workload.stack.allocator != mode || !measured(r.m->peak_reserved_bytes)) continue;
      const VariedMemory v = varied_memory(r, view);
      if (v.activation_bytes > 0) need.push_back((r.m->peak_reserved_bytes - v.reserved_bytes) / v.activation_bytes);
    }
    if (need.empty()) continue;
    double mean = 0, most = 0;
    for (double x : need) {
      mean += x / static_cast<double>(need.size());
      most = std::max(most, x);
    }
    double& share = expandable ? view.c.varying_share_expandable : view.c.varying_share_default;
    double& bound = expandable ? view.c.varying_bound_expandable : view.c.varying_bound_default;
    share = std::max(0.0, mean);
    // The bound is a promise over a whole run: a calibration's few dozen micro-batches meet fewer
    // shapes than an epoch, and the base's bound came from long runs (the H200's 1.51: a Trainer
    // on uniform lengths held 106.7 GiB reserved for 43.2 GiB allocated). A short calibration may
    // raise it, never lower it.
    const double base_bound = bound, fitted = std::max(share, most) + kVaryingBoundMargin;
    bound = std::max(base_bound, fitted);
    notes.push_back(std::string(share_name) + " " + fixed3(share) + ", bound " + fixed3(bound) + " (largest of " +
                    std::to_string(need.size()) + " rows " + fixed3(most) + " + margin " + fixed3(kVaryingBoundMargin) +
                    (fitted < base_bound ? "; kept at the base's " + fixed3(base_bound) + ", from longer runs" : "") +
                    ")");
  }
}

// fused_head_s_per_token: device-bound fused-head rows' micro-batch time beyond the prediction
// without it, per token of device time (the term is scaled by device_scale like the blocks').
void fit_fused_head(const std::vector<Row>& rows, model::StackModel& view, std::vector<std::string>& notes) {
  if (!stack_owns("fused_head_s_per_token", view.stack)) return;
  model::StackModel at0 = view;
  at0.c.fused_head_s_per_token = 0;
  double num = 0, den = 0;
  int used = 0, fused = 0;
  for (const Row& r : rows) {
    if (!r.m->workload.stack.fused_lm_head || varied_widths(r)) continue;
    ++fused;
    const model::MicroBatchTime t = model::CostModel(r.m->workload, at0).micro_batch(r.m->micro_batch);
    if (t.device_s < t.host_s && view.overlap == model::Overlap::max) continue;  // the head's time is hidden
    const double y = measured_micro_batch_s(*r.m), x = at0.c.device_scale * r.f.fused_head_tokens;
    if (!(x > 0)) continue;
    num += (y - t.total_s) * x / (y * y);
    den += x * x / (y * y);
    ++used;
  }
  if (used == 0) {
    if (fused > 0)
      notes.push_back("fused_head_s_per_token kept: none of the " + std::to_string(fused) +
                      " fused-head rows is device-bound, where its time would show");
    return;
  }
  view.c.fused_head_s_per_token = std::max(0.0, num / den);
  notes.push_back("fused_head_s_per_token " + fixed3(view.c.fused_head_s_per_token) + " s from " +
                  std::to_string(used) + " device-bound fused-head rows");
}

}  // namespace

bool varied_widths(const Row& r) { return r.m->padded_lengths.size() > 1; }

double steady_step_s(const Row& r, const model::StackModel& view) {
  const StepParts p = step_parts(r, view);
  return model::combine(p.host, p.device, p.coupling, view.overlap);
}

VariedMemory varied_memory(const Row& r, const model::StackModel& view) {
  // The widest micro-batch sets the allocated peak (every tensor of a step grows with the
  // width), so the row is priced there (its seq_len). Its activations are that peak less a
  // one-token micro-batch's, as the simulator counts them (simulator/padded_cost.h).
  const model::MemoryEstimate e = model::CostModel(r.m->workload, view).memory(r.m->micro_batch);
  model::Workload one = r.m->workload;
  one.train.seq_len = 1;
  const double floor = model::CostModel(one, view).memory(1).peak_allocated_bytes;
  return {std::max(0.0, e.peak_allocated_bytes - floor), e.peak_reserved_bytes, e.worst_reserved_bytes};
}

void fit_shapes(const std::vector<Row>& rows, model::StackModel& view, bool fused_head, std::vector<std::string>& notes) {
  if (fused_head) fit_fused_head(rows, view, notes);
  fit_new_shape(rows, view, notes);
  fit_varying(rows, view, notes);
}

}  // namespace lorasim::calib::detail
