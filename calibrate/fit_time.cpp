// The time fit: host, device, optimizer, the recompute share and the overlap loss, from
// step times and, where the runner measured them, host and device times apart.
#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/fit_internal.h"
#include "calibrate/nnls.h"
#include "model/cost_model.h"

namespace lorasim::calib::detail {
namespace {

using model::Term;

Columns host_columns(model::StackKind s) { return columns({Term::host}, s); }
Columns device_columns(model::StackKind s) { return columns({Term::device, Term::device_traffic, Term::device_kernels}, s); }
Columns optimizer_host_columns(model::StackKind s) { return columns({Term::optimizer_host}, s); }
Columns optimizer_device_columns(model::StackKind s) { return columns({Term::optimizer_device}, s); }
Columns step_columns(model::StackKind s) { return columns({Term::host, Term::device, Term::device_traffic, Term::device_kernels,
                                    Term::optimizer_host, Term::optimizer_device}, s); }

double step_error(const std::vector<Row>& rows, const model::StackModel& hw) {
  double e = 0;
  for (const Row& r : rows) {
    const double t = model::CostModel(r.m->workload, hw).step_time_s(r.m->micro_batch, r.m->accumulation);
    e += std::pow(t / r.m->step_time_s - 1, 2);
  }
  return e;
}

bool step_is_host_bound(const Row& r, const model::StackModel& hw) {
  return model::CostModel(r.m->workload, hw).step(r.m->micro_batch, r.m->accumulation).host_bound;
}

// Joint fit of whole-step times when host and device were not measured apart (a user's
// framework logs only step times). Synchronous devices are linear. With overlap = max the
// model is piecewise linear: each row is assigned to the host- or device-bound regime, the
// linear problem is solved, rows are reassigned, until stable.
void fit_joint(const std::vector<Row>& rows, model::StackModel& hw) {
  // Step times alone cannot separate the coefficients fitted by their own steps; they keep
  // their priors, the values at which they change nothing.
  for (const model::Coefficient& c : model::coefficient_table())
    if (c.field && c.in(hw.stack).fit == model::Fit::own && c.term != Term::allocated && c.term != Term::reserved)
      c.of(hw.c) = c.in(hw.stack).prior;
  enum Regime { host_bound, device_bound, both };
  std::vector<Eigen::VectorXd> x;
  std::vector<double> y;
  auto solve = [&](const std::vector<Regime>& regime) {
    x.clear();
    y.clear();
    const model::Coefficients basis = linear_basis(hw.c, hw.stack);
    for (size_t i = 0; i < rows.size(); ++i) {
      x.push_back(step_regressors(step_columns(hw.stack), rows[i], basis, regime[i] != device_bound,
                                  regime[i] != host_bound));
      y.push_back(rows[i].m->step_time_s);
    }
    set_from_theta(step_columns(hw.stack), fit_relative(x, y), hw.c);
  };
  if (hw.overlap == model::Overlap::sum) {
    solve(std::vector<Regime>(rows.size(), both));
    return;
  }
  // Start from two assignments (all device-bound; smallest micro-batches host-bound) and
  // keep the better converged fit.
  model::StackModel best = hw;
  double best_err = INFINITY;
  for (int start = 0; start < 2; ++start) {
    std::vector<Regime> regime(rows.size(), device_bound);
    if (start == 1)
      for (size_t i = 0; i < rows.size(); ++i)
        regime[i] = rows[i].m->micro_batch <= kHostBoundStartMicroBatch ? host_bound : device_bound;
    for (int iter = 0; iter < kJointIterations; ++iter) {
      solve(regime);
      std::vector<Regime> next(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) next[i] = step_is_host_bound(rows[i], hw) ? host_bound : device_bound;
      if (next == regime) break;
      regime = next;
    }
    const double e = step_error(rows, hw);
    if (e < best_err) {
      best_err = e;
      best = hw;
    }
  }
  hw = best;
}

// With host and device fitted, how much of the shorter side fails to overlap once a
// micro-batch outgrows the launch queue: the measured steady-state micro-batch time is
// t = max(H, D) + k * share(ops) * min(H, D), linear in k. Only rows with more operators
// than the queue holds (the deep group) carry information about k.
void fit_overlap_loss(const std::vector<Row>& rows, model::StackModel& hw) {
  hw.c.overlap_loss = 0;
  double num = 0, den = 0;
  for (const Row& r : rows) {
    if (!measured(r.m->micro_batch_time_s)) continue;
    const double share = r.accumulating_share();
    const model::Features acc = model::accumulating(r.f);
    const auto t1 = model::micro_batch_time(r.f, hw, r.m->workload.train.precision);
    const auto t2 = model::micro_batch_time(acc, hw, r.m->workload.train.precision);
    const double base = (1 - share) * t1.total_s + share * t2.total_s;  // k = 0
    const double slope = (1 - share) * model::overlap_share(r.f.host_ops, hw.c) * std::min(t1.host_s, t1.device_s) +
                         share * model::overlap_share(acc.host_ops, hw.c) * std::min(t2.host_s, t2.device_s);
    const double w = 1.0 / (r.m->micro_batch_time_s * r.m->micro_batch_time_s);
    num += w * slope * (r.m->micro_batch_time_s - base);
    den += w * slope * slope;
  }
  if (den > 0) hw.c.overlap_loss = std::clamp(num / den, 0.0, 1.0);
}

// The runner's optimizer time is what the device shows: the dispatch when the step was
// host-bound (the device waited), the kernels when it was device-bound (dispatch hidden).
// Which one a row shows depends on the optimizer's own cost, so classify with the current
// coefficients, fit, and repeat until the classification is stable.
void fit_optimizer(const std::vector<Row>& rows, model::StackModel& hw) {
  std::vector<int> regime;
  for (int iter = 0; iter < kOptimizerIterations; ++iter) {
    std::vector<int> next;
    std::vector<Eigen::VectorXd> hx, dx;
    std::vector<double> hy, dy;
    const model::Coefficients basis = linear_basis(hw.c, hw.stack);
    for (const Row& r : rows) {
      if (!measured(r.m->optimizer_time_s)) continue;
      const bool host_bound = step_is_host_bound(r, hw);
      next.push_back(host_bound);
      const Columns& cols = host_bound ? optimizer_host_columns(hw.stack) : optimizer_device_columns(hw.stack);
      (host_bound ? hx : dx).push_back(regressors(cols, r.f, basis));
      (host_bound ? hy : dy).push_back(r.m->optimizer_time_s);
    }
    if (next == regime) return;
    regime = next;
    if (hy.size() >= 2) set_from_theta(optimizer_host_columns(hw.stack), fit_relative(hx, hy), hw.c);
    if (dy.size() >= 2) set_from_theta(optimizer_device_columns(hw.stack), fit_relative(dx, dy), hw.c);
  }
}

// Host dispatch time depends on the operator count, not on the micro-batch or sequence
// length, and it drifts over seconds on a shared host: the rows of one depth, measured
// back to back, share that drift. So fit host time through one median per operator count,
// each depth weighing the same, which gives the deep runs their full lever arm for the
// extrapolation to a full-depth model. Deep runs (no split) count where they are clearly
// host-bound: their steady-state micro-batch time is then the host time.
void fit_host_by_depth(const std::vector<Row>& rows, model::StackModel& hw) {
  std::map<long long, std::vector<double>> by_ops;
  for (const Row& r : rows) {
    if (r.f.recompute_ops > 0) continue;  // checkpointing: its own share, fitted below
    const long long ops = std::llround(r.f.host_ops);
    if (measured(r.m->host_time_s)) {
      by_ops[ops].push_back(r.m->host_time_s);
    } else if (measured(r.m->micro_batch_time_s) && r.m->accumulation == 1) {
      const double device = model::micro_batch_time(r.f, hw, r.m->workload.train.precision).device_s;
      if (device < kHostBoundForHostLine * r.m->micro_batch_time_s) by_ops[ops].push_back(r.m->micro_batch_time_s);
    } else if (measured(r.m->micro_batch_time_s)) {
      // Mean over the step's micro-batches: all but the first also dispatch the gradient adds.
      const double device = model::micro_batch_time(r.f, hw, r.m->workload.train.precision).device_s;
      const double extra = r.accumulating_share() * r.f.lora_tensors;
      if (device < kHostBoundForHostLine * r.m->micro_batch_time_s)
        by_ops[std::llround(r.f.host_ops + extra)].push_back(r.m->micro_batch_time_s);
    }
  }
  if (by_ops.size() < 2) return;
  // Absolute, not relative, errors here: the deepest point must weigh most, since full
  // models lie beyond it.
  const model::Coefficients basis = linear_basis(hw.c, hw.stack);
  Eigen::MatrixXd A(static_cast<Eigen::Index>(by_ops.size()), static_cast<Eigen::Index>(host_columns(hw.stack).size()));
  Eigen::VectorXd b(A.rows());
  Eigen::Index i = 0;
  for (const auto& [ops, times] : by_ops) {
    model::Features f;  // a micro-batch of `ops` ordinary operators: all the host line sees
    f.host_ops = static_cast<double>(ops);
    A.row(i) = regressors(host_columns(hw.stack), f, basis).transpose();
    b(i++) = median(times);
  }
  set_from_theta(host_columns(hw.stack), nnls(A, b), hw.c);
}

// The host time of a checkpointed micro-batch, t = fixed + per_op * (ops - (1 - k) * recompute),
// with the line above known, gives the host share k of the recomputing forward: its
// operators run without autograd recording, so they cost less than ordinary ones. Rows
// count where the host time shows: measured apart, or clearly host-bound.
void fit_recompute_host_share(const std::vector<Row>& rows, model::StackModel& hw) {
  const model::Coefficients& c = hw.c;
  std::vector<double> shares;
  for (const Row& r : rows) {
    if (r.f.recompute_ops <= 0 || c.host_per_op_s <= 0) continue;
    double host = NAN, extra = 0;
    if (measured(r.m->host_time_s)) {
      host = r.m->host_time_s;
    } else if (measured(r.m->micro_batch_time_s)) {
      // Host-bound: the micro-batch takes max(host, device), so it is the host time as long
      // as the device side is clearly shorter.
      const double device = model::micro_batch_time(r.f, hw, r.m->workload.train.precision).device_s;
      if (device < kHostBoundForRecomputeShare * r.m->micro_batch_time_s) {
        host = r.m->micro_batch_time_s;
        extra = r.accumulating_share() * r.f.lora_tensors;
      }
    }
    if (!std::isfinite(host)) continue;
    const double ops = r.f.host_ops + extra - r.f.recompute_ops;
    shares.push_back((host - c.host_fixed_s - c.host_per_op_s * ops) / (c.host_per_op_s * r.f.recompute_ops));
  }
  if (shares.empty()) return;
  hw.c.recompute_host_share = std::clamp(median(shares), 0.0, kMaxRecomputeHostShare);
}

}  // namespace

Eigen::VectorXd step_regressors(const Columns& cols, const Row& r, const model::Coefficients& basis, bool host,
                                bool device) {
  const double a = static_cast<double>(r.m->accumulation);
  const model::Features acc = model::accumulating(r.f);
  Eigen::VectorXd x(static_cast<Eigen::Index>(cols.size()));
  for (size_t k = 0; k < cols.size(); ++k) {
    const model::Coefficient& c = *cols[k];
    const bool host_side = c.term == Term::host || c.term == Term::optimizer_host;
    double v = 0;
    if (host_side ? !host : !device) {
      v = 0;  // the side the step does not show
    } else if (c.term == Term::optimizer_host || c.term == Term::optimizer_device) {
      v = c.feature(r.f, basis);  // once per step
    } else {
      // a micro-batches; all but the first add what accumulating adds (one add per tensor).
      const double first = c.feature(r.f, basis);
      v = first * a + (a - 1) * (c.feature(acc, basis) - first);
    }
    x(static_cast<Eigen::Index>(k)) = v;
  }
  return x;
}

void fit_time(const std::vector<Row>& rows, model::StackModel& hw) {
  std::vector<Eigen::VectorXd> dx;
  std::vector<double> dy;
  double min_ops = INFINITY, max_ops = 0;
  const model::Coefficients basis = linear_basis(hw.c, hw.stack);
  for (const Row& r : rows) {
    if (measured(r.m->host_time_s) && measured(r.m->device_time_s)) {
      dx.push_back(regressors(device_columns(hw.stack), r.f, basis));
      dy.push_back(r.m->device_time_s);
      min_ops = std::min(min_ops, r.f.host_ops);
      max_ops = std::max(max_ops, r.f.host_ops);
    }
  }
  // The runner measured host and device separately on enough rows, at two or more operator
  // counts (depths): fit each directly. Otherwise the split cannot tell fixed from
  // per-operator host cost, and the joint fit is the better estimate.
  const bool split_usable = dy.size() >= kMinSplitRows && max_ops > kMinOpsSpread * min_ops;
  if (hw.overlap == model::Overlap::max && split_usable) {
    set_from_theta(device_columns(hw.stack), fit_relative(dx, dy), hw.c);
    fit_host_by_depth(rows, hw);
    fit_recompute_host_share(rows, hw);
    fit_optimizer(rows, hw);
    fit_overlap_loss(rows, hw);
    return;
  }
  fit_joint(rows, hw);
}

}  // namespace lorasim::calib::detail
