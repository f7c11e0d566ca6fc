// A stack's own rows: measurements of one stack (hf-peft's) refine that stack's rows
// ([stack.hf-peft]) of a base profile whose device rows stay as they are. Rows from `lorasim
// calibrate --stack hf-peft` (several depths, micro-batches, lengths) identify every row; fewer
// rows refine them by the anchored fit's group scales (fit_anchored.cpp). Every design here is
// built from the table's columns (model/coefficients.h) and the cost model's equations.
#include <algorithm>
#include <cmath>

#include "calibrate/fit_internal.h"
#include "calibrate/nnls.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::calib::detail {
namespace {

using model::Term;

// The micro-batch's measured time: the probe's own figure, else the step without its
// optimizer, per micro-batch.
double micro_batch_time(const Measurement& m) {
  if (measured(m.micro_batch_time_s)) return m.micro_batch_time_s;
  const double opt = measured(m.optimizer_time_s) ? m.optimizer_time_s : 0.0;
  return (m.step_time_s - opt) / static_cast<double>(m.accumulation);
}

// A row's average micro-batch as the host line sees it: its ordinary operators (all but the
// first micro-batch add into gradients).
model::Features mean_host(const Row& r) {
  model::Features f;
  f.host_ops = r.f.host_ops + r.accumulating_share() * r.f.lora_tensors;
  return f;
}
double mean_ops(const Row& r) { return mean_host(r).host_ops; }

// Device time of a row's micro-batch from the device's rows, before the stack's device scales:
// the blocks' part and the head + loss part (the regressors of device_scale, head_device_scale).
struct DeviceParts {
  double blocks = 0, head = 0;
  double scaled(const model::Coefficients& c) const { return c.device_scale * blocks + c.head_device_scale * head; }
};
DeviceParts device_parts(const Row& r, const model::StackModel& view) {
  model::StackModel m = view;
  m.c.device_scale = m.c.head_device_scale = 1.0;
  const model::Precision p = r.m->workload.train.precision;
  const double all = model::micro_batch_time(r.f, m, p).device_s;
  const double head = model::head_device_s(r.f, m.c, m.rate_scale(p));
  return {all - head, head};
}
double device_time(const Row& r, const model::StackModel& view) { return device_parts(r, view).scaled(view.c); }

// max(H, k D) per micro-batch, H = the host columns: rows are assigned to the side that sets
// their time, the two linear problems are solved, rows are reassigned, until stable.
void fit_host_and_device(const std::vector<const Row*>& rows, model::StackModel& view) {
  const Columns host_cols = columns({Term::host}, view.stack);
  const model::Coefficients basis = linear_basis(view.c, view.stack);
  std::vector<double> y;
  std::vector<Eigen::VectorXd> hrow;
  std::vector<DeviceParts> parts;
  for (const Row* r : rows) {
    y.push_back(micro_batch_time(*r->m));
    parts.push_back(device_parts(*r, view));
    hrow.push_back(regressors(host_cols, mean_host(*r), basis));
  }
  if (rows.size() < kMinRows) return;
  std::vector<double> dev;
  for (const DeviceParts& d : parts) dev.push_back(d.blocks + d.head);
  if (view.overlap == model::Overlap::sum) {
    // A synchronous device (the CPU): host and device time add, H + k D, one linear problem.
    std::vector<Eigen::VectorXd> x;
    for (size_t i = 0; i < rows.size(); ++i) {
      Eigen::VectorXd xi(hrow[i].size() + 1);
      xi << hrow[i], dev[i];
      x.push_back(xi);
    }
    const Eigen::VectorXd th = fit_relative(x, y);
    set_from_theta(host_cols, th.head(hrow.front().size()), view.c);
    const double k = th(th.size() - 1);
    if (k > 0) view.c.device_scale = view.c.head_device_scale = k;
    return;
  }
  // Start: a row is device-bound when its device time alone is most of what was measured.
  std::vector<bool> host(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) host[i] = dev[i] < kHostBoundForHostLine * y[i];
  model::Coefficients line = view.c;
  double kb = view.c.device_scale, kh = view.c.head_device_scale;
  for (int iter = 0; iter < kJointIterations; ++iter) {
    std::vector<Eigen::VectorXd> hx, dx;
    std::vector<double> hy, dy;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (host[i]) {
        hx.push_back(hrow[i]);
        hy.push_back(y[i]);
      } else {
        dx.push_back((Eigen::VectorXd(2) << parts[i].blocks, parts[i].head).finished());
        dy.push_back(y[i]);
      }
    }
    if (hy.size() >= 2) set_from_theta(host_cols, fit_relative(hx, hy), line);
    if (dy.size() >= 2) {
      // Both scales when the device-bound rows weigh blocks and head differently; one otherwise.
      const Eigen::VectorXd k = fit_relative(dx, dy);
      if (k(0) > 0 && k(1) > 0) {
        kb = k(0);
        kh = k(1);
      } else {
        std::vector<Eigen::VectorXd> one;
        for (const auto& x : dx) one.push_back((Eigen::VectorXd(1) << x(0) + x(1)).finished());
        kb = kh = fit_relative(one, dy)(0);
      }
    }
    std::vector<bool> next(rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      next[i] = model::sum_terms(Term::host, mean_host(*rows[i]), line) > kb * parts[i].blocks + kh * parts[i].head;
    if (next == host) break;
    host = next;
  }
  for (const model::Coefficient* c : host_cols) c->of(view.c) = c->of(line);
  // A loop over another stack's model code (lightning) keeps that stack's device scales unless a
  // micro-batch at the plan's full depth was device-bound: scales fitted on a few layers alone,
  // where the head weighs most, did not carry to the whole model.
  if (model::training_stack(view.stack).base_stack()) {
    int64_t deepest = 0;
    for (const Row* r : rows) deepest = std::max(deepest, r->m->workload.arch.num_layers);
    bool deep_device = false;
    for (size_t i = 0; i < rows.size(); ++i) deep_device |= !host[i] && rows[i]->m->workload.arch.num_layers == deepest;
    if (!deep_device) return;
  }
  if (kb > 0) view.c.device_scale = kb;
  if (kh > 0) view.c.head_device_scale = kh;
}

// Checkpointed rows whose time is clearly the host's give the recomputing forward's share.
void fit_recompute_share(const std::vector<const Row*>& rows, model::StackModel& view) {
  std::vector<double> shares;
  const double h0 = view.c.host_fixed_s, h1 = view.c.host_per_op_s;
  for (const Row* r : rows) {
    if (r->f.recompute_ops <= 0 || h1 <= 0) continue;
    double y = micro_batch_time(*r->m);
    const double device = device_time(*r, view);
    if (view.overlap == model::Overlap::sum) y -= device;  // host and device add: the rest is host
    else if (device > kHostBoundForRecomputeShare * y) continue;
    const double ordinary = mean_ops(*r) - r->f.recompute_ops;
    shares.push_back((y - h0 - h1 * ordinary) / (h1 * r->f.recompute_ops));
  }
  if (shares.empty()) return;
  view.c.recompute_host_share = std::clamp(median(shares), 0.0, kMaxStackRecomputeHostShare);
}

void fit_optimizer_host(const std::vector<const Row*>& rows, model::StackModel& view) {
  const Columns cols = columns({Term::optimizer_host}, view.stack);
  const model::Coefficients basis = linear_basis(view.c, view.stack);
  std::vector<Eigen::VectorXd> x;
  std::vector<double> y;
  for (const Row* r : rows) {
    if (!measured(r->m->optimizer_time_s)) continue;
    x.push_back(regressors(cols, r->f, basis));
    y.push_back(r->m->optimizer_time_s);
  }
  if (y.size() < 2 || cols.empty()) return;
  set_from_theta(cols, fit_relative(x, y), view.c);
}

// The allocated rows (workspace first, as fit_memory) against the measured allocated peak
// beyond the static memory, then the reserved rows beyond the allocated peak: overhead, per
// activation byte, per logits tensor (reserved_scale held at 1: the slack rows carry it).
void fit_memory_terms(const std::vector<const Row*>& rows, model::StackModel& view) {
  std::vector<const Row*> used;
  for (const Row* r : rows)
    if (measured(r->m->peak_allocated_bytes)) used.push_back(r);
  if (used.size() < kMinRows) return;
  Columns allocated = columns({Term::allocated}, view.stack);
  if (allocated.empty()) return;  // a stack that reads its memory rows from another (lightning)
  std::stable_partition(allocated.begin(), allocated.end(),
                        [](const model::Coefficient* c) { return std::string_view(c->name) == "workspace_bytes"; });
  const model::Coefficient* logits = model::find_coefficient("logits_scale");
  for (int iter = 0; iter < kMemorySideIterations; ++iter) {
    // Relative to the whole peak: what a user compares with the GPU's memory.
    const model::Coefficients basis = linear_basis(view.c, view.stack);
    const Eigen::Index n = static_cast<Eigen::Index>(used.size());
    Eigen::MatrixXd A(n, static_cast<Eigen::Index>(allocated.size()));
    Eigen::VectorXd b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Row& r = *used[static_cast<size_t>(i)];
      const double peak = r.m->peak_allocated_bytes;
      A.row(i) = regressors(allocated, r.f, basis).transpose() / peak;
      b(i) = (peak - r.f.static_bytes) / peak;
    }
    const Eigen::VectorXd m = nnls(A, b);
    for (size_t k = 0; k < allocated.size(); ++k) {
      const double t = m(static_cast<Eigen::Index>(k));
      if (allocated[k] == logits && !(t > 0)) continue;  // no loss buffers visible: keep the prior
      allocated[k]->of(view.c) = t;
    }
  }
  const Columns slack = columns({Term::reserved, Term::reserved_slack}, view.stack);
  if (slack.empty()) return;
  const model::Coefficients basis = linear_basis(view.c, view.stack);
  // The reserved line and slack of one shape: a row of many widths also holds the allocator's
  // varying-shape share, fitted apart (fit_shapes.cpp).
  std::vector<const Row*> both;
  for (const Row* r : used)
    if (measured(r->m->peak_reserved_bytes) && !varied_widths(*r)) both.push_back(r);
  if (both.size() < kMinRows) return;
  // Absolute, weighted by the reserved peak: the slack is a small part of it.
  const Eigen::Index n = static_cast<Eigen::Index>(both.size());
  Eigen::MatrixXd A(n, static_cast<Eigen::Index>(slack.size()));
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Row& r = *both[static_cast<size_t>(i)];
    model::Features f = r.f;
    f.allocated_bytes = r.m->peak_allocated_bytes;
    const double w = 1.0 / r.m->peak_reserved_bytes;
    A.row(i) = regressors(slack, f, basis).transpose() * w;
    b(i) = (r.m->peak_reserved_bytes - f.allocated_bytes) * w;
  }
  view.c.reserved_scale = 1.0;
  set_from_theta(slack, nnls(A, b), view.c);
}

}  // namespace

model::StackKind stack_of(const std::vector<Row>& rows) {
  const model::StackKind first = rows.front().m->workload.stack.kind;
  size_t same = 0;
  for (const Row& r : rows) same += r.m->workload.stack.kind == first;
  if (same != rows.size()) {
    model::StackKind other = first;
    for (const Row& r : rows)
      if (r.m->workload.stack.kind != first) other = r.m->workload.stack.kind;
    throw CalibrationError(std::to_string(same) + " of " + std::to_string(rows.size()) + " rows are of the " +
                           model::stack_name(first) + " stack and the rest of " + model::stack_name(other) +
                           "'s: fit one stack at a time (the `stack` column, docs/measurements.md)");
  }
  return first;
}

bool identifies_stack(const std::vector<Row>& rows) {
  std::vector<long long> depths;
  for (const Row& r : rows) depths.push_back(r.m->workload.arch.num_layers);
  std::sort(depths.begin(), depths.end());
  return rows.size() >= kMinStackRows && std::unique(depths.begin(), depths.end()) - depths.begin() >= 2;
}

bool fit_stack_full(const std::vector<Row>& rows, model::StackModel& view) {
  // The steady-state time terms come from rows of one width through Transformers' loss (the
  // calibration plan's ordinary runs): rows of many widths add new shapes, and the fused head
  // its own cost per token, each fitted after these (fit_shapes.cpp). Rows that are all of
  // one kind (a user's SFTTrainer rows) still fit the terms, and the fused head is not apart.
  size_t unfused = 0, one_width = 0;
  for (const Row& r : rows) {
    one_width += !varied_widths(r);
    unfused += !varied_widths(r) && !r.m->workload.stack.fused_lm_head;
  }
  const bool fused_apart = unfused >= kMinRows;
  const bool widths_apart = one_width >= kMinRows;
  std::vector<const Row*> plain, ckpt;
  for (const Row& r : rows) {
    if (widths_apart && varied_widths(r)) continue;
    if (fused_apart && r.m->workload.stack.fused_lm_head) continue;
    (r.f.recompute_ops > 0 ? ckpt : plain).push_back(&r);
  }
  fit_host_and_device(plain, view);
  fit_recompute_share(ckpt, view);
  std::vector<const Row*> all;
  for (const Row& r : rows) all.push_back(&r);
  fit_optimizer_host(all, view);
  fit_memory_terms(all, view);
  return fused_apart;
}

}  // namespace lorasim::calib::detail
