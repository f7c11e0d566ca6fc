// Anchored fits: measurements refine a base profile instead of replacing it. A few timed
// runs of one workload cannot separate a dozen coefficients (a full fit of them trades
// coefficients against each other and writes "no cost" rates and zero scales that reproduce
// those runs and nothing else), but they do say how much faster or slower this machine's
// host and device are than the base's, and how much more memory the stack keeps. So the
// anchored fit moves groups of the base's coefficients by one multiplicative scale each, and
// only the groups the rows identify (docs/cost-model.md, "Anchored fits").
#include <algorithm>
#include <cmath>
#include <string>

#include "calibrate/fit_internal.h"
#include "model/cost_model.h"

namespace lorasim::calib::detail {
namespace {

using model::Term;

// ---- time: a host scale and a device scale ------------------------------------------------


struct TimeFit {
  const std::vector<StepParts>& rows;
  bool sum;

  double predict(const StepParts& p, double kh, double kd) const {
    return model::combine(kh * p.host, kd * p.device, p.coupling, sum ? model::Overlap::sum : model::Overlap::max);
  }
  double error(double kh, double kd) const {
    double e = 0;
    for (const StepParts& p : rows) e += std::pow(predict(p, kh, kd) / p.y - 1, 2);
    return e;
  }
  // d T / d k times k, per side: the part of the prediction each scale multiplies.
  std::pair<double, double> parts(const StepParts& p, double kh, double kd) const {
    const double h = kh * p.host, d = kd * p.device;
    if (sum) return {h, d};
    return h > d ? std::make_pair(h, p.coupling * d) : std::make_pair(p.coupling * h, d);
  }
};

// Candidates for (kh, kd) with `host_free` / `device_free` (a fixed scale stays 1). The model
// is linear in the free scales between the breakpoints where a row changes sides, so the
// least-squares optimum is the best of each piece's stationary point and the breakpoints;
// each candidate is scored with the true piecewise model, so the best one is the global
// optimum. Returns the error and the scales; error = INFINITY when no candidate is positive.
// A relative step that moves a row balanced exactly at the fitted scales to either side.
constexpr double kTieStep = 1e-6;

struct Scales {
  double kh = 1, kd = 1, error = INFINITY;
};

Scales solve_time(const TimeFit& tf, bool host_free, bool device_free) {
  Scales best;
  auto consider = [&](double kh, double kd) {
    if (!(kh > 0 && kd > 0) || !std::isfinite(kh) || !std::isfinite(kd)) return;
    const double e = tf.error(kh, kd);
    if (e < best.error) best = {kh, kd, e};
  };
  if (!host_free && !device_free) {
    consider(1, 1);
    return best;
  }
  // Breakpoints in the free variable: rho = kh / kd when both are free, else the free scale.
  std::vector<double> cuts;
  for (const StepParts& p : tf.rows) {
    if (p.host <= 0 || p.device <= 0 || tf.sum) continue;
    cuts.push_back(host_free && device_free ? p.device / p.host : host_free ? p.device / p.host : p.host / p.device);
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<double> probes;  // one point inside each piece
  if (cuts.empty()) {
    probes.push_back(1);
  } else {
    probes.push_back(cuts.front() / 2);
    for (size_t i = 0; i + 1 < cuts.size(); ++i) probes.push_back(0.5 * (cuts[i] + cuts[i + 1]));
    probes.push_back(cuts.back() * 2);
  }
  for (double probe : probes) {
    // The rows' columns on this piece: T = kh * a + kd * d, linear.
    const double kh0 = host_free ? probe : 1, kd0 = host_free && device_free ? 1 : device_free ? probe : 1;
    Eigen::MatrixXd A(static_cast<Eigen::Index>(tf.rows.size()), 2);
    Eigen::VectorXd b(A.rows());
    for (size_t i = 0; i < tf.rows.size(); ++i) {
      const StepParts& p = tf.rows[i];
      const auto [h, d] = tf.parts(p, kh0, kd0);
      const auto ii = static_cast<Eigen::Index>(i);
      A(ii, 0) = h / kh0 / p.y;
      A(ii, 1) = d / kd0 / p.y;
      b(ii) = 1;
    }
    if (host_free && device_free) {
      const Eigen::Vector2d k = A.colPivHouseholderQr().solve(b);
      consider(k(0), k(1));
    } else {
      // One free column; the fixed one moves to the right-hand side.
      const Eigen::Index f = host_free ? 0 : 1;
      const Eigen::VectorXd rhs = b - A.col(1 - f);
      const double den = A.col(f).squaredNorm();
      if (den > 0) {
        const double k = A.col(f).dot(rhs) / den;
        host_free ? consider(k, 1) : consider(1, k);
      }
    }
  }
  for (double c : cuts) {
    if (host_free && device_free) {
      // On the ray kh = c * kd the model is linear in kd alone.
      double num = 0, den = 0;
      for (const StepParts& p : tf.rows) {
        const double g = tf.predict(p, c, 1) / p.y;
        num += g;
        den += g * g;
      }
      if (den > 0) consider(c * num / den, num / den);
    } else {
      host_free ? consider(c, 1) : consider(1, c);
    }
  }
  return best;
}

// Smallest over largest singular value of a design with unit-norm columns: 1 for orthogonal
// columns, 0 when one column is a combination of the others.
double conditioning(Eigen::MatrixXd A) {
  if (A.cols() == 0) return 1;
  if (A.rows() < A.cols()) return 0;
  for (Eigen::Index j = 0; j < A.cols(); ++j) {
    const double n = A.col(j).norm();
    if (n == 0) return 0;
    A.col(j) /= n;
  }
  const Eigen::VectorXd s = Eigen::JacobiSVD<Eigen::MatrixXd>(A).singularValues();
  return s(s.size() - 1) / s(0);
}

bool time_term(Term t) {
  return t == Term::host || t == Term::optimizer_host || t == Term::device || t == Term::device_traffic ||
         t == Term::device_kernels || t == Term::optimizer_device;
}

void scale_time_groups(double kh, double kd, model::StackModel& m) {
  bool device_shared = false;  // the stack reads the device's rows and may not move them
  for (const model::Coefficient& c : model::coefficient_table()) {
    if (!c.field || !time_term(c.term) || c.form == model::Form::ratio) continue;  // a ratio scales with its base
    const bool host = c.term == Term::host || c.term == Term::optimizer_host;
    const double k = host ? kh : kd;
    if (k == 1) continue;
    if (!c.owned_by(m.stack)) {
      device_shared = device_shared || !host;
      continue;
    }
    c.of(m.c) = c.form == model::Form::rate ? c.of(m.c) / k : c.of(m.c) * k;
  }
  if (device_shared) {
    // The stack carries the device's speed in its device scales, by the ratio the GEMM rate
    // would have moved by (the figures of the fits that scaled the rates and then folded them).
    const double g = m.c.gemm_tflops, rate = g / (g / kd);
    m.c.device_scale *= rate;
    m.c.head_device_scale *= rate;
  }
}

void fit_time_scales(const std::vector<Row>& rows, model::StackModel& hw, std::vector<GroupScale>& report) {
  std::vector<StepParts> parts;
  for (const Row& r : rows) parts.push_back(step_parts(r, hw));
  const TimeFit tf{parts, hw.overlap == model::Overlap::sum};
  GroupScale host{"host", 1, true, ""}, device{"device", 1, true, ""};
  Scales k;
  for (;;) {
    k = solve_time(tf, host.identified, device.identified);
    if (!host.identified && !device.identified) break;
    // Each free scale must dominate at least one row's prediction (under max(H, D) a side
    // that is hidden everywhere leaves no trace in the step times) and the two must not
    // move the rows alike.
    double host_share = 0, device_share = 0;
    Eigen::MatrixXd J(static_cast<Eigen::Index>(parts.size()), 2);
    const double kh = std::isfinite(k.error) ? k.kh : 1, kd = std::isfinite(k.error) ? k.kd : 1;
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto [h, d] = tf.parts(parts[i], kh, kd);
      // The share must hold on both sides of the fitted scale: a row balanced exactly at
      // the fit (where a flat error put the scale) is dominated on one side only.
      auto share = [&](double kh_, double kd_, bool of_host) {
        const auto [h_, d_] = tf.parts(parts[i], kh_, kd_);
        return (of_host ? h_ : d_) / tf.predict(parts[i], kh_, kd_);
      };
      host_share = std::max(host_share, std::min(share(kh * (1 - kTieStep), kd, true),
                                                  share(kh * (1 + kTieStep), kd, true)));
      device_share = std::max(device_share, std::min(share(kh, kd * (1 - kTieStep), false),
                                                     share(kh, kd * (1 + kTieStep), false)));
      J(static_cast<Eigen::Index>(i), 0) = h / parts[i].y;
      J(static_cast<Eigen::Index>(i), 1) = d / parts[i].y;
    }
    const bool dominant_h = host_share >= kMinDominantShare, dominant_d = device_share >= kMinDominantShare;
    const bool both = host.identified && device.identified;
    if (std::isfinite(k.error) && (!host.identified || dominant_h) && (!device.identified || dominant_d) &&
        (!both || conditioning(J) >= kMinConditioning))
      break;
    // Release the scale with the weaker evidence and solve for the other alone.
    GroupScale& drop = (host.identified && (!device.identified || host_share <= device_share)) ? host : device;
    drop.identified = false;
    const bool dominated = &drop == &host ? !dominant_h : !dominant_d;
    drop.why = dominated ? std::string("no row is ") + drop.group + "-bound: kept at the base"
                         : "the rows move host and device time alike: kept at the base";
  }
  if (!std::isfinite(k.error)) k = {1, 1, tf.error(1, 1)};
  host.scale = host.identified ? k.kh : 1;
  device.scale = device.identified ? k.kd : 1;
  for (GroupScale* g : {&host, &device})
    if (g->identified) g->why = "rows where the " + g->group + " sets the step time";
  scale_time_groups(host.scale, device.scale, hw);
  report.push_back(host);
  report.push_back(device);
}

// ---- memory: scales of the allocated terms and of the reserved line ------------------------

struct Group {
  std::string name;
  std::vector<const model::Coefficient*> members;
};

// Least squares, relative to `weight`, of target = sum_g scale_g * column_g. Accepted only
// when every group is visible, the design is well conditioned and every scale positive.
bool solve_scales(const std::vector<Eigen::VectorXd>& cols, const Eigen::VectorXd& target, const Eigen::VectorXd& weight,
                  Eigen::VectorXd& scales) {
  const Eigen::Index n = target.size(), k = static_cast<Eigen::Index>(cols.size());
  if (k == 0 || n < k) return false;
  Eigen::MatrixXd A(n, k);
  for (Eigen::Index j = 0; j < k; ++j) A.col(j) = cols[static_cast<size_t>(j)].cwiseQuotient(weight);
  if (conditioning(A) < kMinConditioning) return false;
  scales = A.colPivHouseholderQr().solve(target.cwiseQuotient(weight));
  for (Eigen::Index j = 0; j < k; ++j)
    if (!(scales(j) > 0) || !std::isfinite(scales(j))) return false;
  return true;
}

// Tries the partitions of the terms from finest to coarsest and keeps the first one the rows
// identify; `contribution(c, i)` is the base's term of coefficient c on row i. Terms outside
// the groups that move keep the base's value, so their base terms leave the target.
template <class Contribution>
void fit_memory_groups(const std::vector<std::vector<Group>>& partitions, size_t n, const Eigen::VectorXd& target,
                       const Eigen::VectorXd& weight, Contribution contribution, model::StackModel& hw,
                       const model::StackModel& base, std::vector<GroupScale>& report) {
  auto column = [&](const std::vector<const model::Coefficient*>& members) {
    Eigen::VectorXd col = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(n));
    for (const model::Coefficient* c : members)
      for (size_t i = 0; i < n; ++i) col(static_cast<Eigen::Index>(i)) += contribution(*c, i);
    return col;
  };
  // A term that is a small part of every row's peak (or absent, or 0 in the base) has its
  // scale set by the residuals of the others, and that scale would then reach unchecked the
  // workloads where the term is large (an allocator constant on a small model).
  auto visible = [&](const Eigen::VectorXd& col) {
    return col.cwiseQuotient(weight).cwiseAbs().maxCoeff() >= kMinMemoryShare;
  };
  const std::vector<Group>& finest = partitions.front();
  std::vector<const model::Coefficient*> moved;
  for (const std::vector<Group>& partition : partitions) {
    std::vector<Eigen::VectorXd> cols;
    std::vector<const Group*> used;
    std::vector<const model::Coefficient*> members;
    for (const Group& g : partition) {
      const Eigen::VectorXd col = column(g.members);
      if (!visible(col)) continue;
      cols.push_back(col);
      used.push_back(&g);
      members.insert(members.end(), g.members.begin(), g.members.end());
    }
    Eigen::VectorXd rhs = target;
    for (const Group& g : finest)
      for (const model::Coefficient* c : g.members)
        if (std::find(members.begin(), members.end(), c) == members.end()) rhs -= column({c});
    Eigen::VectorXd s;
    if (!solve_scales(cols, rhs, weight, s)) continue;
    for (size_t j = 0; j < used.size(); ++j) {
      const double k = s(static_cast<Eigen::Index>(j));
      for (const model::Coefficient* c : used[j]->members) c->of(hw.c) = c->of(base.c) * k;
      report.push_back({used[j]->name, k, true, "rows where the " + used[j]->name + " term is large"});
    }
    moved = members;
    break;
  }
  for (const Group& g : finest) {
    bool in = false;
    for (const model::Coefficient* c : g.members) in |= std::find(moved.begin(), moved.end(), c) != moved.end();
    if (in) continue;
    report.push_back({g.name, 1, false,
                      visible(column(g.members)) ? "the rows do not separate it from the other terms: kept at the base"
                                                 : "a small part of every row's peak: kept at the base"});
  }
}

const model::Coefficient* coef(const char* name) { return model::find_coefficient(name); }

void fit_memory_scales(const std::vector<Row>& rows, model::StackModel& hw, std::vector<GroupScale>& report) {
  const model::StackModel base = hw;
  std::vector<const Row*> used;
  std::vector<double> alloc;
  for (const Row& r : rows) {
    const double a = r.allocated_target();
    if (!measured(a)) continue;
    used.push_back(&r);
    alloc.push_back(a);
  }
  // Finest first: each allocated term apart, then the activations as one (saved activations
  // and the loss's buffers grow together at one length and model), then that scale alone.
  const Group saved{"saved", {coef("saved_scale")}}, scores{"attention_score", {coef("attention_score_scale")}},
      logits{"logits", {coef("logits_scale")}}, workspace{"workspace", {coef("workspace_bytes")}},
      activations{"activations", {coef("saved_scale"), coef("attention_score_scale"), coef("logits_scale")}};
  const std::vector<std::vector<Group>> allocated = {{saved, scores, logits, workspace}, {activations, workspace},
                                                     {activations}};
  if (!used.empty()) {
    const size_t n = used.size();
    Eigen::VectorXd target(static_cast<Eigen::Index>(n)), weight(target.size());
    for (size_t i = 0; i < n; ++i) {
      target(static_cast<Eigen::Index>(i)) = alloc[i] - used[i]->f.static_bytes;
      weight(static_cast<Eigen::Index>(i)) = alloc[i];  // relative to the whole peak, as the full fit
    }
    // Which side of a checkpointed peak applies depends on the scales: fit, re-pick, refit.
    std::vector<GroupScale> groups;
    for (int iter = 0; iter < kMemorySideIterations; ++iter) {
      const model::StackModel sides = hw;
      hw = base;
      groups.clear();
      fit_memory_groups(
          allocated, n, target, weight,
          [&](const model::Coefficient& c, size_t i) { return c.of(base.c) * c.feature(used[i]->f, sides.c); }, hw, base,
          groups);
    }
    report.insert(report.end(), groups.begin(), groups.end());
  } else {
    for (const Group& g : allocated.front()) report.push_back({g.name, 1, false, "no row measured memory"});
  }

  // A row of many widths holds the allocator's varying-shape share beyond the line (fit_shapes.cpp).
  std::vector<const Row*> both;
  for (const Row& r : rows)
    if (measured(r.m->peak_allocated_bytes) && measured(r.m->peak_reserved_bytes) && !varied_widths(r))
      both.push_back(&r);
  const Group line_scale{"reserved_scale", {coef("reserved_scale")}},
      overhead{"reserved_overhead", {coef("reserved_overhead_bytes")}},
      line{"reserved", {coef("reserved_scale"), coef("reserved_overhead_bytes")}};
  const std::vector<std::vector<Group>> reserved = {{line_scale, overhead}, {line}};
  if (both.empty()) {
    const bool varied = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return varied_widths(r); });
    report.push_back({line.name, 1, false,
                      varied ? "only rows of many widths measured reserved memory: their hold beyond the line is "
                               "the varying-shape share's (fitted below)"
                             : "no row measured allocated and reserved memory"});
    return;
  }
  Eigen::VectorXd target(static_cast<Eigen::Index>(both.size()));
  for (size_t i = 0; i < both.size(); ++i) {
    // A stack's own slack rows are not the reserved line's: off the target.
    const Row& r = *both[i];
    model::Features f = r.f;
    f.allocated_bytes = r.m->peak_allocated_bytes;
    target(static_cast<Eigen::Index>(i)) = r.m->peak_reserved_bytes - model::sum_terms(Term::reserved_slack, f, base.c);
  }
  fit_memory_groups(
      reserved, both.size(), target, target,
      [&](const model::Coefficient& c, size_t i) {
        model::Features f = both[i]->f;
        f.allocated_bytes = both[i]->m->peak_allocated_bytes;
        return c.of(base.c) * c.feature(f, base.c);
      },
      hw, base, report);
}

}  // namespace

void fit_anchored(const std::vector<Row>& rows, model::StackModel& hw, std::vector<GroupScale>& report) {
  fit_time_scales(rows, hw, report);
  fit_memory_scales(rows, hw, report);
}

}  // namespace lorasim::calib::detail
