// Least-squares fits of the cost model. Every fit minimises relative error (each row is
// divided by its measured value): a 5 ms error matters on a 50 ms step, not on a 5 s one.
#include "calibrate/fit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/nnls.h"
#include "model/analytics.h"
#include "model/cost_model.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

struct Row {
  const Measurement* m;
  model::Features f;
  double lora_tensors, trainable;
  double accumulating_share() const {  // micro-batches of a step that add into gradients
    return static_cast<double>(m->accumulation - 1) / static_cast<double>(m->accumulation);
  }
};

std::string label_of(const Measurement& m) {
  return m.workload.arch.name + " L=" + std::to_string(m.workload.arch.num_layers) +
         " s=" + std::to_string(m.workload.train.seq_len) + " b=" + std::to_string(m.micro_batch) +
         " a=" + std::to_string(m.accumulation) + (m.workload.train.grad_ckpt ? " ckpt" : "") +
         (m.workload.lora.rank != 16 ? " r=" + std::to_string(m.workload.lora.rank) : "");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Weighted NNLS: rows scaled by 1/y so that residuals are relative.
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

// Regressors of the host and device time of one micro-batch; `extra_ops` are the
// gradient-accumulation adds of a micro-batch that is not the first of its step.
constexpr Eigen::Index kDeviceCols = 8;
Eigen::VectorXd host_x(const model::Features& f, double extra_ops = 0) {
  return (Eigen::VectorXd(2) << 1.0, f.host_ops + extra_ops).finished();
}
Eigen::VectorXd device_x(const model::Features& f, double extra_ops = 0) {
  return (Eigen::VectorXd(kDeviceCols) << 1.0, f.gemm_flops, f.gemm_flops_per_token, f.head_flops,
          f.attention_flops, f.memory_bytes, f.loss_bytes, f.host_ops + extra_ops)
      .finished();
}
// Optimizer regressors: host dispatch [1, tensors], device work [tensors, parameters].
Eigen::VectorXd optimizer_host_x(const Row& r) { return (Eigen::VectorXd(2) << 1.0, r.lora_tensors).finished(); }
Eigen::VectorXd optimizer_device_x(const Row& r) {
  return (Eigen::VectorXd(2) << r.lora_tensors, r.trainable).finished();
}

// A zero coefficient on a rate means the data shows no cost for that work: keep the
// rate finite but so high that its term vanishes.
double rate_from(double inverse, double unit) { return inverse > 0 ? 1.0 / (inverse * unit) : 1e9; }

void set_host(model::TimeCoefficients& t, const Eigen::VectorXd& h) {
  t.host_fixed_s = h(0);
  t.host_per_op_s = h(1);
}

void set_device(model::TimeCoefficients& t, const Eigen::VectorXd& d) {
  t.device_fixed_s = d(0);
  t.gemm_tflops = rate_from(d(1), 1e12);
  t.gemm_half_tokens = d(1) > 0 ? d(2) / d(1) : 0;
  if (d(1) <= 0 && d(2) > 0) {  // only the per-GEMM fixed cost is visible: keep it as fixed time
    t.gemm_tflops = 1e9;
    t.gemm_half_tokens = d(2) * 1e21;
  }
  t.head_tflops = rate_from(d(3), 1e12);
  t.attention_tflops = rate_from(d(4), 1e12);
  t.memory_gbps = rate_from(d(5), 1e9);
  t.loss_gbps = rate_from(d(6), 1e9);
  t.per_kernel_s = d(7);
}

void set_optimizer_host(model::TimeCoefficients& t, const Eigen::VectorXd& o) {
  t.optimizer_fixed_s = o(0);
  t.optimizer_per_tensor_s = o(1);
}

void set_optimizer_device(model::TimeCoefficients& t, const Eigen::VectorXd& o) {
  t.optimizer_device_per_tensor_s = o(0);
  t.optimizer_per_param_s = o(1);
}

double step_error(const std::vector<Row>& rows, const model::HardwareModel& hw) {
  double e = 0;
  for (const Row& r : rows) {
    const double t = model::CostModel(r.m->workload, hw).step_time_s(r.m->micro_batch, r.m->accumulation);
    e += std::pow(t / r.m->step_time_s - 1, 2);
  }
  return e;
}

// Step regressors: host and device sums over the step (a micro-batches, a - 1 of them
// accumulating, and the optimizer). `regime` 0 keeps only the host side (host-bound),
// 1 only the device side, 2 both (a synchronous device adds them).
Eigen::VectorXd step_x(const Row& r, int regime) {
  const double a = static_cast<double>(r.m->accumulation);
  const double extra = (a - 1) * model::accumulation_ops(static_cast<int64_t>(r.lora_tensors));
  Eigen::VectorXd h = host_x(r.f) * a, d = device_x(r.f) * a;
  h(1) += extra;
  d(kDeviceCols - 1) += extra;
  Eigen::VectorXd oh = optimizer_host_x(r), od = optimizer_device_x(r);
  if (regime == 0) {
    d.setZero();
    od.setZero();
  } else if (regime == 1) {
    h.setZero();
    oh.setZero();
  }
  Eigen::VectorXd row(2 + kDeviceCols + 4);
  row << h, d, oh, od;
  return row;
}

void apply_step_fit(const Eigen::VectorXd& th, model::HardwareModel& hw) {
  set_host(hw.time, th.segment(0, 2));
  set_device(hw.time, th.segment(2, kDeviceCols));
  set_optimizer_host(hw.time, th.segment(2 + kDeviceCols, 2));
  set_optimizer_device(hw.time, th.segment(4 + kDeviceCols, 2));
}

// Joint fit of whole-step times when host and device were not measured apart (a user's
// framework logs only step times). Synchronous devices are linear. With overlap = max the
// model is piecewise linear: each row is assigned to the host- or device-bound regime, the
// linear problem is solved, rows are reassigned, until stable.
void fit_joint(const std::vector<Row>& rows, model::HardwareModel& hw) {
  // Step times alone cannot separate these; the regressors assume their neutral values.
  hw.time.overlap_loss = 0;
  hw.time.recompute_host_share = 1;
  std::vector<Eigen::VectorXd> x;
  std::vector<double> y;
  auto solve = [&](const std::vector<int>& regime) {
    x.clear();
    y.clear();
    for (size_t i = 0; i < rows.size(); ++i) {
      x.push_back(step_x(rows[i], regime[i]));
      y.push_back(rows[i].m->step_time_s);
    }
    apply_step_fit(fit_relative(x, y), hw);
  };
  if (hw.overlap == model::Overlap::sum) {
    solve(std::vector<int>(rows.size(), 2));
    return;
  }
  // Start from two assignments (all device-bound; smallest micro-batches host-bound) and
  // keep the better converged fit.
  model::HardwareModel best = hw;
  double best_err = INFINITY;
  for (int start = 0; start < 2; ++start) {
    std::vector<int> regime(rows.size(), 1);
    if (start == 1)
      for (size_t i = 0; i < rows.size(); ++i) regime[i] = rows[i].m->micro_batch <= 2 ? 0 : 1;
    for (int iter = 0; iter < 30; ++iter) {
      solve(regime);
      std::vector<int> next(rows.size());
      for (size_t i = 0; i < rows.size(); ++i)
        next[i] = model::CostModel(rows[i].m->workload, hw)
                          .step(rows[i].m->micro_batch, rows[i].m->accumulation)
                          .host_bound
                      ? 0
                      : 1;
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
void fit_overlap_loss(const std::vector<Row>& rows, model::HardwareModel& hw) {
  hw.time.overlap_loss = 0;
  double num = 0, den = 0;
  for (const Row& r : rows) {
    if (!measured(r.m->micro_batch_time_s)) continue;
    const double share = r.accumulating_share();
    model::Features acc = r.f;
    acc.host_ops += model::accumulation_ops(static_cast<int64_t>(r.lora_tensors));
    const auto t1 = model::micro_batch_time(r.f, hw, r.m->workload.train.precision);
    const auto t2 = model::micro_batch_time(acc, hw, r.m->workload.train.precision);
    const double base = (1 - share) * t1.total_s + share * t2.total_s;  // k = 0
    const double slope = (1 - share) * model::overlap_share(r.f.host_ops, hw.time) * std::min(t1.host_s, t1.device_s) +
                         share * model::overlap_share(acc.host_ops, hw.time) * std::min(t2.host_s, t2.device_s);
    const double w = 1.0 / (r.m->micro_batch_time_s * r.m->micro_batch_time_s);
    num += w * slope * (r.m->micro_batch_time_s - base);
    den += w * slope * slope;
  }
  if (den > 0) hw.time.overlap_loss = std::clamp(num / den, 0.0, 1.0);
}

// The runner's optimizer time is what the device shows: the dispatch when the step was
// host-bound (the device waited), the kernels when it was device-bound (dispatch hidden).
// Which one a row shows depends on the optimizer's own cost, so classify with the current
// coefficients, fit, and repeat until the classification is stable.
void fit_optimizer(const std::vector<Row>& rows, model::HardwareModel& hw) {
  std::vector<int> regime;
  for (int iter = 0; iter < 10; ++iter) {
    std::vector<int> next;
    std::vector<Eigen::VectorXd> hx, dx;
    std::vector<double> hy, dy;
    for (const Row& r : rows) {
      if (!measured(r.m->optimizer_time_s)) continue;
      const bool host_bound =
          model::CostModel(r.m->workload, hw).step(r.m->micro_batch, r.m->accumulation).host_bound;
      next.push_back(host_bound);
      (host_bound ? hx : dx).push_back(host_bound ? optimizer_host_x(r) : optimizer_device_x(r));
      (host_bound ? hy : dy).push_back(r.m->optimizer_time_s);
    }
    if (next == regime) return;
    regime = next;
    if (hy.size() >= 2) set_optimizer_host(hw.time, fit_relative(hx, hy));
    if (dy.size() >= 2) set_optimizer_device(hw.time, fit_relative(dx, dy));
  }
}

// Host dispatch time depends on the operator count, not on the micro-batch or sequence
// length, and it drifts over seconds on a shared host: the rows of one depth, measured
// back to back, share that drift. So fit host time through one median per operator count,
// each depth weighing the same, which gives the deep runs their full lever arm for the
// extrapolation to a full-depth model. Deep runs (no split) count where they are clearly
// host-bound: their steady-state micro-batch time is then the host time.
void fit_host_by_depth(const std::vector<Row>& rows, model::HardwareModel& hw) {
  std::map<long long, std::vector<double>> by_ops;
  for (const Row& r : rows) {
    if (r.f.recompute_ops > 0) continue;  // checkpointing: its own share, fitted below
    const long long ops = std::llround(r.f.host_ops);
    if (measured(r.m->host_time_s)) {
      by_ops[ops].push_back(r.m->host_time_s);
    } else if (measured(r.m->micro_batch_time_s) && r.m->accumulation == 1) {
      const double device = model::micro_batch_time(r.f, hw, r.m->workload.train.precision).device_s;
      if (device < 0.5 * r.m->micro_batch_time_s) by_ops[ops].push_back(r.m->micro_batch_time_s);
    } else if (measured(r.m->micro_batch_time_s)) {
      // Mean over the step's micro-batches: all but the first also dispatch the gradient adds.
      const double device = model::micro_batch_time(r.f, hw, r.m->workload.train.precision).device_s;
      const double extra = r.accumulating_share() * model::accumulation_ops(static_cast<int64_t>(r.lora_tensors));
      if (device < 0.5 * r.m->micro_batch_time_s)
        by_ops[std::llround(r.f.host_ops + extra)].push_back(r.m->micro_batch_time_s);
    }
  }
  std::vector<Eigen::VectorXd> x;
  std::vector<double> y;
  for (const auto& [ops, times] : by_ops) {
    x.push_back((Eigen::VectorXd(2) << 1.0, static_cast<double>(ops)).finished());
    y.push_back(median(times));
  }
  // Absolute, not relative, errors here: the deepest point must weigh most, since full
  // models lie beyond it.
  if (y.size() < 2) return;
  Eigen::MatrixXd A(static_cast<Eigen::Index>(y.size()), 2);
  Eigen::VectorXd b(static_cast<Eigen::Index>(y.size()));
  for (size_t i = 0; i < y.size(); ++i) {
    A.row(static_cast<Eigen::Index>(i)) = x[i].transpose();
    b(static_cast<Eigen::Index>(i)) = y[i];
  }
  set_host(hw.time, nnls(A, b));
}

// The host time of a checkpointed micro-batch, t = fixed + per_op * (ops - (1 - k) * recompute),
// with the line above known, gives the host share k of the recomputing forward: its
// operators run without autograd recording, so they cost less than ordinary ones. Rows
// count where the host time shows: measured apart, or clearly host-bound.
void fit_recompute_host_share(const std::vector<Row>& rows, model::HardwareModel& hw) {
  const model::TimeCoefficients& c = hw.time;
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
      if (device < 0.8 * r.m->micro_batch_time_s) {
        host = r.m->micro_batch_time_s;
        extra = r.accumulating_share() * model::accumulation_ops(static_cast<int64_t>(r.lora_tensors));
      }
    }
    if (!std::isfinite(host)) continue;
    const double ops = r.f.host_ops + extra - r.f.recompute_ops;
    shares.push_back((host - c.host_fixed_s - c.host_per_op_s * ops) / (c.host_per_op_s * r.f.recompute_ops));
  }
  if (shares.empty()) return;
  hw.time.recompute_host_share = std::clamp(median(shares), 0.0, 2.0);
}

void fit_time(const std::vector<Row>& rows, model::HardwareModel& hw) {
  std::vector<Eigen::VectorXd> hx, dx;
  std::vector<double> hy, dy;
  for (const Row& r : rows) {
    if (measured(r.m->host_time_s) && measured(r.m->device_time_s)) {
      hx.push_back(host_x(r.f));
      hy.push_back(r.m->host_time_s);
      dx.push_back(device_x(r.f));
      dy.push_back(r.m->device_time_s);
    }
  }
  // The runner measured host and device separately on enough rows, at two or more operator
  // counts (depths): fit each directly. Otherwise the split cannot tell fixed from
  // per-operator host cost, and the joint fit is the better estimate.
  double min_ops = INFINITY, max_ops = 0;
  for (const auto& x : hx) {
    min_ops = std::min(min_ops, x(1));
    max_ops = std::max(max_ops, x(1));
  }
  const bool split_usable = hy.size() >= 4 && max_ops > 1.2 * min_ops;
  if (hw.overlap == model::Overlap::max && split_usable) {
    set_device(hw.time, fit_relative(dx, dy));
    fit_host_by_depth(rows, hw);
    fit_recompute_host_share(rows, hw);
    fit_optimizer(rows, hw);
    fit_overlap_loss(rows, hw);
    return;
  }
  fit_joint(rows, hw);
}

// The allocated-peak regressors of a row: [1, saved, scores, logits]. With checkpointing the
// peak holds either the loss's buffers or a rebuilt block (model::peak_memory), whichever
// the current coefficients say is larger.
Eigen::VectorXd memory_x(const model::Features& f, const model::MemoryCoefficients& m) {
  Eigen::VectorXd x(4);
  if (model::rebuilt_block_sets_peak(f, m))
    x << 1.0, f.saved_bytes + f.recompute_bytes, f.attention_score_bytes, 0.0;
  else if (f.recompute_bytes > 0)
    x << 1.0, f.saved_bytes, 0.0, f.logits_bytes;
  else
    x << 1.0, f.saved_bytes, f.attention_score_bytes, f.logits_bytes;
  return x;
}

void fit_memory(const std::vector<Row>& rows, model::HardwareModel& hw) {
  // Allocated peak = static (analytic) + workspace + multipliers x analytic activation terms.
  // Rows that measured only the reserved peak (HF users often log just that) stand in
  // for allocated with a reserved model of 1:1. Weighted by the whole peak, not the
  // activation part, so the error is relative to what the user compares with the GPU's memory.
  std::vector<const Row*> used;
  std::vector<double> alloc;
  std::vector<Eigen::VectorXd> rx;
  std::vector<double> ry;
  for (const Row& r : rows) {
    const double a = measured(r.m->peak_allocated_bytes) ? r.m->peak_allocated_bytes : r.m->peak_reserved_bytes;
    if (!measured(a)) continue;
    used.push_back(&r);
    alloc.push_back(a);
    if (measured(r.m->peak_allocated_bytes) && measured(r.m->peak_reserved_bytes)) {
      rx.push_back((Eigen::VectorXd(2) << r.m->peak_allocated_bytes, 1.0).finished());
      ry.push_back(r.m->peak_reserved_bytes);
    }
  }
  if (used.size() < 3) return;  // too few rows: keep the prior memory coefficients
  const Eigen::Index n = static_cast<Eigen::Index>(used.size());
  // Which side of a checkpointed peak applies depends on the coefficients: fit, re-pick, refit.
  for (int iter = 0; iter < 3; ++iter) {
    Eigen::MatrixXd A(n, 4);
    Eigen::VectorXd b(n);
    for (Eigen::Index k = 0; k < n; ++k) {
      const Row& r = *used[static_cast<size_t>(k)];
      const double a = alloc[static_cast<size_t>(k)];
      A.row(k) = memory_x(r.f, hw.memory).transpose() / a;
      b(k) = (a - r.f.static_bytes) / a;
    }
    const Eigen::VectorXd m = nnls(A, b);
    hw.memory.workspace_bytes = m(0);
    hw.memory.saved_scale = m(1);
    hw.memory.attention_score_scale = m(2);
    hw.memory.logits_scale = m(3);
  }
  if (ry.size() >= 2) {
    const Eigen::VectorXd r = fit_relative(rx, ry);
    hw.memory.reserved_scale = r(0);
    hw.memory.reserved_overhead_bytes = r(1);
  } else {
    hw.memory.reserved_scale = 1;
    hw.memory.reserved_overhead_bytes = 0;
  }
}

}  // namespace

std::vector<Residual> residuals(const std::vector<Measurement>& rows, const model::HardwareModel& hw) {
  std::vector<Residual> out;
  for (const Measurement& m : rows) {
    if (m.oom) continue;
    const model::CostModel cm(m.workload, hw);
    Residual r;
    r.label = label_of(m);
    r.predicted_step_time_s = cm.step_time_s(m.micro_batch, m.accumulation);
    r.measured_step_time_s = m.step_time_s;
    const model::MemoryEstimate e = cm.memory(m.micro_batch);
    r.predicted_reserved_bytes = e.peak_reserved_bytes;
    r.predicted_allocated_bytes = e.peak_allocated_bytes;
    r.measured_reserved_bytes = m.peak_reserved_bytes;
    r.measured_allocated_bytes = m.peak_allocated_bytes;
    out.push_back(r);
  }
  return out;
}

FitReport fit_profile(const std::vector<Measurement>& all, const model::HardwareModel& base) {
  std::vector<Row> rows;
  std::vector<Measurement> usable;
  for (const Measurement& m : all) {
    if (m.oom || !measured(m.step_time_s)) continue;
    usable.push_back(m);
  }
  for (const Measurement& m : usable) {
    const model::ParamCounts pc = model::count_params(m.workload.arch, m.workload.lora);
    rows.push_back({&m, model::features(m.workload, m.micro_batch), static_cast<double>(pc.lora_tensors),
                    static_cast<double>(pc.trainable)});
  }
  if (rows.size() < 3)
    throw CalibrationError("only " + std::to_string(rows.size()) +
                           " usable measurements (at least 3 without out-of-memory are needed to fit a profile)");
  FitReport rep;
  rep.hardware = base;
  fit_time(rows, rep.hardware);
  fit_memory(rows, rep.hardware);
  rep.hardware.calibrated = true;

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
