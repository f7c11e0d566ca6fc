// Least-squares fits of the cost model. Every fit minimises relative error (each row is
// divided by its measured value): a 5 ms error matters on a 50 ms step, not on a 5 s one.
// The design matrices come from the coefficient table (model/coefficients.h); the time fit
// is in fit_time.cpp, the memory fit in fit_memory.cpp.
#include "calibrate/fit.h"

#include <algorithm>
#include <cmath>

#include "calibrate/fit_internal.h"
#include "calibrate/measurement_label.h"
#include "calibrate/nnls.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::calib {
namespace detail {

Columns columns(std::initializer_list<model::Term> terms, model::StackKind stack) {
  Columns cols;
  for (const model::Coefficient& c : model::coefficient_table())
    if (c.field && c.in(stack).fit == model::Fit::linear && std::find(terms.begin(), terms.end(), c.term) != terms.end())
      cols.push_back(&c);
  return cols;
}

model::Coefficients linear_basis(const model::Coefficients& c, model::StackKind stack) {
  model::Coefficients basis = c;
  for (const model::Coefficient& k : model::coefficient_table()) {
    if (!k.field) continue;
    if (k.in(stack).fit == model::Fit::own) k.of(basis) = k.in(stack).prior;
    if (k.form == model::Form::ratio) k.of(basis) = 0;
  }
  return basis;
}

Eigen::VectorXd regressors(const Columns& cols, const model::Features& f, const model::Coefficients& basis) {
  Eigen::VectorXd x(static_cast<Eigen::Index>(cols.size()));
  for (size_t k = 0; k < cols.size(); ++k) x(static_cast<Eigen::Index>(k)) = cols[k]->feature(f, basis);
  return x;
}

// Rates above this are written as kNoCostRate: a term that small is no cost, and the profile's
// range (hwprofiles/) refuses rates beyond it.
constexpr double kMaxFittedRate = 1e3 * model::kNoCostRate;

void set_from_theta(const Columns& cols, const Eigen::VectorXd& theta, model::Coefficients& v) {
  auto theta_of = [&](const char* name) {
    for (size_t k = 0; k < cols.size(); ++k)
      if (std::string_view(cols[k]->name) == name) return theta(static_cast<Eigen::Index>(k));
    throw CalibrationError(std::string("internal: ") + name + " is not a column of this fit");
  };
  for (size_t k = 0; k < cols.size(); ++k) {
    const model::Coefficient& c = *cols[k];
    const double t = theta(static_cast<Eigen::Index>(k));
    switch (c.form) {
      case model::Form::linear: c.of(v) = t; break;
      case model::Form::rate: {
        const double r = t > 0 ? 1.0 / (t * c.unit) : model::kNoCostRate;
        c.of(v) = r <= kMaxFittedRate ? r : model::kNoCostRate;
        break;
      }
      case model::Form::ratio: {
        // theta = value * theta of the base; with no base cost visible (its rate at
        // kNoCostRate), the value carries the whole term: a fixed cost per GEMM.
        const model::Coefficient& base = *model::find_coefficient(c.base);
        const double tb = theta_of(c.base);
        c.of(v) = tb > 0 ? t / tb : t > 0 ? t * (model::kNoCostRate * base.unit) : 0;
        break;
      }
    }
  }
}

Eigen::VectorXd fit_relative(const std::vector<Eigen::VectorXd>& x, const std::vector<double>& y) {
  const Eigen::Index n = static_cast<Eigen::Index>(y.size()), k = x.front().size();
  Eigen::MatrixXd A(n, k);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    A.row(i) = x[static_cast<size_t>(i)].transpose() / y[static_cast<size_t>(i)];
    b(i) = 1.0;
  }
  return nnls(A, b);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace detail

namespace {

// Relative change below which a coefficient counts as unmoved.
constexpr double kMovedTolerance = 1e-9;

// Rows whose regressors are all equal (one workload at one micro-batch, however often or at
// whatever accumulation) pin the prediction of that configuration and nothing else: every
// coefficient could trade against every other, and a fit would report 0% error and then
// extrapolate anywhere.
void require_two_configurations(const std::vector<detail::Row>& rows, const model::StackModel& base) {
  const model::Coefficients basis = detail::linear_basis(base.c, base.stack);
  for (const detail::Row& r : rows)
    for (const model::Coefficient& c : model::coefficient_table())
      if (c.feature && c.feature(r.f, basis) != c.feature(rows.front().f, basis)) return;
  const Measurement& m = *rows.front().m;
  throw CalibrationError("all " + std::to_string(rows.size()) + " usable measurements are of one configuration (" +
                         m.workload.arch.name + " L=" + std::to_string(m.workload.arch.num_layers) +
                         " s=" + std::to_string(m.workload.train.seq_len) + " b=" + std::to_string(m.micro_batch) +
                         "), which identifies no coefficient; add rows at two or more micro-batches or workloads");
}

}  // namespace

std::vector<Residual> residuals(const std::vector<Measurement>& rows, const model::HardwareModel& hw) {
  std::vector<Residual> out;
  for (const Measurement& m : rows) {
    if (m.oom) continue;
    const model::CostModel cm(m.workload, hw);
    Residual r;
    r.label = run_label(m);
    r.predicted_step_time_s = cm.step_time_s(m.micro_batch, m.accumulation);
    r.measured_step_time_s = m.step_time_s;
    const model::MemoryEstimate e = cm.memory(m.micro_batch);
    r.predicted_reserved_bytes = e.peak_reserved_bytes;
    r.predicted_allocated_bytes = e.peak_allocated_bytes;
    const detail::Row row{&m, model::features(m.workload, m.micro_batch)};
    if (detail::varied_widths(row)) {
      // As validate predicts a row of many widths: width by width, its new shapes, and the
      // allocator's varying-shape hold at its widest micro-batch.
      const model::StackModel& view = cm.model();
      const model::Coefficients& c = view.c;
      r.predicted_step_time_s = detail::steady_step_s(row, view) +
                                (measured(m.new_shapes_per_step) ? c.new_shape_s * m.new_shapes_per_step : 0.0);
      const bool expandable = m.workload.stack.allocator == model::AllocatorMode::expandable;
      r.predicted_reserved_bytes += (expandable ? c.varying_share_expandable : c.varying_share_default) *
                                    detail::varied_memory(row, view).activation_bytes;
    }
    r.measured_reserved_bytes = m.peak_reserved_bytes;
    r.measured_allocated_bytes = m.peak_allocated_bytes;
    out.push_back(r);
  }
  return out;
}

bool identifies_full_model(const std::vector<Measurement>& rows) {
  size_t split = 0;
  double min_ops = INFINITY, max_ops = 0;
  for (const Measurement& m : rows) {
    if (m.oom || !measured(m.host_time_s) || !measured(m.device_time_s)) continue;
    const double ops = model::features(m.workload, m.micro_batch).host_ops;
    ++split;
    min_ops = std::min(min_ops, ops);
    max_ops = std::max(max_ops, ops);
  }
  return split >= detail::kMinSplitRows && max_ops > detail::kMinOpsSpread * min_ops;
}

FitReport fit_profile(const std::vector<Measurement>& all, const model::HardwareModel& base, FitMode mode) {
  std::vector<detail::Row> rows;
  std::vector<Measurement> usable;
  for (const Measurement& m : all) {
    if (m.oom || !measured(m.step_time_s)) continue;
    usable.push_back(m);
  }
  for (const Measurement& m : usable) rows.push_back({&m, model::features(m.workload, m.micro_batch)});
  if (rows.size() < detail::kMinRows)
    throw CalibrationError("only " + std::to_string(rows.size()) + " usable measurements (at least " +
                           std::to_string(detail::kMinRows) +
                           " without out-of-memory are needed to fit a profile)");
  const model::StackKind stack = detail::stack_of(rows);
  model::StackModel view = model::stack_model(base, stack);
  require_two_configurations(rows, view);
  FitReport rep;
  rep.stack = stack;
  if (!model::training_stack(stack).calibrates_device()) {
    // The rows refine the stack's own rows; the device's stay the base's. A quantized base's
    // rows fit only its own terms, after the float rows fitted the rest: their time mixes both.
    std::vector<detail::Row> plain, quant;
    for (const detail::Row& r : rows) (detail::quantized(r) ? quant : plain).push_back(r);
    if (plain.size() >= detail::kMinRows) {
      rep.anchored = mode == FitMode::anchored || (mode == FitMode::automatic && !detail::identifies_stack(plain));
      bool fused_apart = false;
      if (rep.anchored)
        detail::fit_anchored(plain, view, rep.scales);
      else
        fused_apart = detail::fit_stack_full(plain, view);
      detail::fit_shapes(plain, view, fused_apart, rep.shape_notes);
    } else if (!quant.empty()) {
      rep.shape_notes.push_back("the stack's other terms kept from the base: " + std::to_string(plain.size()) +
                                " rows of a float base (" + std::to_string(detail::kMinRows) + " needed to fit them)");
    }
    detail::fit_quant(quant, view, rep.shape_notes);
  } else if ((rep.anchored = mode == FitMode::anchored ||
                             (mode == FitMode::automatic && !identifies_full_model(usable)))) {
    detail::fit_anchored(rows, view, rep.scales);
  } else {
    detail::fit_time(rows, view);
    detail::fit_memory(rows, view);
  }
  rep.hardware = base;
  model::store(view.c, stack, rep.hardware);
  // A stack's own fit leaves the device's rows and their provenance as the base had them.
  if (model::training_stack(stack).calibrates_device())
    rep.hardware.calibrated = true;
  else
    rep.hardware.origin(stack).calibrated = true;
  // A scale fitted to 1 within rounding moved nothing.
  for (size_t i = 0; i < model::stored_values().size(); ++i) {
    const model::StoredValue& v = model::stored_values()[i];
    // The fitted stack's as it reads them (a stack with a base moved from its base's values);
    // another stack's as stored (one that reads its base's moved with it, but was not fitted).
    const bool fitted = v.stack == stack;
    const double before = fitted ? base.value(*v.row, v.stack) : base.values[i];
    const double after = fitted ? rep.hardware.value(*v.row, v.stack) : rep.hardware.values[i];
    const std::string section = v.entry().section;
    const std::string name = section.rfind("stack.", 0) == 0 ? section + "." + v.row->name : v.row->name;
    if (std::fabs(after - before) > kMovedTolerance * std::max(std::fabs(before), std::fabs(after)))
      rep.moved.push_back({name, before, after});
  }

  rep.residuals = residuals(usable, rep.hardware);
  double ts = 0, rs = 0, as = 0;
  for (const Residual& r : rep.residuals) {
    const double te = r.predicted_step_time_s / r.measured_step_time_s - 1;
    ts += te * te;
    rep.time_max_rel = std::max(rep.time_max_rel, std::fabs(te));
    ++rep.time_points;
    if (measured(r.measured_reserved_bytes)) {
      const double re = r.predicted_reserved_bytes / r.measured_reserved_bytes - 1;
      rs += re * re;
      rep.reserved_max_rel = std::max(rep.reserved_max_rel, std::fabs(re));
      ++rep.memory_points;
      if (measured(r.measured_allocated_bytes)) {
        const double ae = r.predicted_allocated_bytes / r.measured_allocated_bytes - 1;
        as += ae * ae;
      }
    }
  }
  rep.time_rms_rel = std::sqrt(ts / std::max(1, rep.time_points));
  rep.reserved_rms_rel = std::sqrt(rs / std::max(1, rep.memory_points));
  rep.allocated_rms_rel = std::sqrt(as / std::max(1, rep.memory_points));
  return rep;
}

}  // namespace lorasim::calib
