// The hf-peft stack's fit: rows of one stack refine that stack's terms ([stack.hf-peft]) of a
// base profile whose GPU half stays as it is. Rows from `lorasim calibrate --stack hf-peft`
// (several depths, micro-batches, lengths) identify every term; fewer rows refine the stack's
// terms by the anchored fit's group scales (fit_anchored.cpp).
#include <algorithm>
#include <cmath>

#include "calibrate/fit_internal.h"
#include "calibrate/nnls.h"
#include "model/cost_model.h"
#include "model/error.h"

namespace lorasim::calib::detail {
namespace {

model::StackSpec hf_stack() {
  model::StackSpec s;
  s.kind = model::StackKind::hf_peft;
  return s;
}

// The micro-batch's measured time: the probe's own figure, else the step without its
// optimizer, per micro-batch.
double micro_batch_time(const Measurement& m) {
  if (measured(m.micro_batch_time_s)) return m.micro_batch_time_s;
  const double opt = measured(m.optimizer_time_s) ? m.optimizer_time_s : 0.0;
  return (m.step_time_s - opt) / static_cast<double>(m.accumulation);
}

// Host operators of a row's average micro-batch (all but the first add into gradients).
double mean_ops(const Row& r) {
  return r.f.host_ops + r.accumulating_share() * r.f.lora_tensors;
}

// Device time of a row's micro-batch from the GPU half, before the stack's device scales:
// the blocks' part and the head + loss part.
struct DeviceParts {
  double blocks = 0, head = 0;
  double scaled(const model::HardwareModel& v) const { return v.device_scale * blocks + v.head_device_scale * head; }
};
DeviceParts device_parts(const Row& r, const model::HardwareModel& view) {
  model::HardwareModel hw = view;
  hw.device_scale = hw.head_device_scale = 1.0;
  const model::Precision p = r.m->workload.train.precision;
  const double all = model::micro_batch_time(r.f, hw, p).device_s;
  const double head = model::head_device_s(r.f, hw, model::rate_scale(hw, p));
  return {all - head, head};
}
double device_time(const Row& r, const model::HardwareModel& view) { return device_parts(r, view).scaled(view); }

// max(H, k D) per micro-batch, H = h0 + h1 * ops: rows are assigned to the side that sets their
// time, the two linear problems are solved, rows are reassigned, until stable.
void fit_host_and_device(const std::vector<const Row*>& rows, model::HardwareModel& view) {
  std::vector<double> y, ops;
  std::vector<DeviceParts> parts;
  for (const Row* r : rows) {
    y.push_back(micro_batch_time(*r->m));
    parts.push_back(device_parts(*r, view));
    ops.push_back(mean_ops(*r));
  }
  if (rows.size() < kMinRows) return;
  std::vector<double> dev;
  for (const DeviceParts& d : parts) dev.push_back(d.blocks + d.head);
  if (view.overlap == model::Overlap::sum) {
    // A synchronous device (the CPU): host and device time add, H + k D, one linear problem.
    std::vector<Eigen::VectorXd> x;
    for (size_t i = 0; i < rows.size(); ++i) x.push_back((Eigen::VectorXd(3) << 1.0, ops[i], dev[i]).finished());
    const Eigen::VectorXd th = fit_relative(x, y);
    view.time.host_fixed_s = th(0);
    view.time.host_per_op_s = th(1);
    if (th(2) > 0) view.device_scale = view.head_device_scale = th(2);
    return;
  }
  // Start: a row is device-bound when its device time alone is most of what was measured.
  std::vector<bool> host(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) host[i] = dev[i] < kHostBoundForHostLine * y[i];
  double h0 = view.time.host_fixed_s, h1 = view.time.host_per_op_s;
  double kb = view.device_scale, kh = view.head_device_scale;
  for (int iter = 0; iter < kJointIterations; ++iter) {
    std::vector<Eigen::VectorXd> hx, dx;
    std::vector<double> hy, dy;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (host[i]) {
        hx.push_back((Eigen::VectorXd(2) << 1.0, ops[i]).finished());
        hy.push_back(y[i]);
      } else {
        dx.push_back((Eigen::VectorXd(2) << parts[i].blocks, parts[i].head).finished());
        dy.push_back(y[i]);
      }
    }
    if (hy.size() >= 2) {
      const Eigen::VectorXd h = fit_relative(hx, hy);
      h0 = h(0);
      h1 = h(1);
    }
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
    for (size_t i = 0; i < rows.size(); ++i) next[i] = h0 + h1 * ops[i] > kb * parts[i].blocks + kh * parts[i].head;
    if (next == host) break;
    host = next;
  }
  view.time.host_fixed_s = h0;
  view.time.host_per_op_s = h1;
  if (kb > 0) view.device_scale = kb;
  if (kh > 0) view.head_device_scale = kh;
}

// Checkpointed rows whose time is clearly the host's give the recomputing forward's share.
void fit_recompute_share(const std::vector<const Row*>& rows, model::HardwareModel& view) {
  std::vector<double> shares;
  const double h0 = view.time.host_fixed_s, h1 = view.time.host_per_op_s;
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
  view.time.recompute_host_share = std::clamp(median(shares), 0.0, kMaxStackRecomputeHostShare);
}

void fit_optimizer_host(const std::vector<const Row*>& rows, model::HardwareModel& view) {
  std::vector<Eigen::VectorXd> x;
  std::vector<double> y;
  for (const Row* r : rows) {
    if (!measured(r->m->optimizer_time_s)) continue;
    x.push_back((Eigen::VectorXd(2) << 1.0, r->f.lora_tensors).finished());
    y.push_back(r->m->optimizer_time_s);
  }
  if (y.size() < 2) return;
  const Eigen::VectorXd o = fit_relative(x, y);
  view.time.optimizer_fixed_s = o(0);
  view.time.optimizer_per_tensor_s = o(1);
}

// Allocated peak = static + workspace + saved_scale * saved + logits_scale * loss buffers (or,
// checkpointed, the rebuilt block); reserved = scale * allocated + overhead + share * logits.
void fit_memory_terms(const std::vector<const Row*>& rows, model::HardwareModel& view) {
  std::vector<const Row*> used;
  for (const Row* r : rows)
    if (measured(r->m->peak_allocated_bytes)) used.push_back(r);
  if (used.size() < kMinRows) return;
  for (int iter = 0; iter < kMemorySideIterations; ++iter) {
    std::vector<Eigen::VectorXd> x;
    std::vector<double> y;
    for (const Row* r : used) {
      const model::Features& f = r->f;
      Eigen::VectorXd c(3);
      if (model::rebuilt_block_sets_peak(f, view.memory))
        c << 1.0, f.saved_bytes + f.recompute_bytes, 0.0;
      else
        c << 1.0, f.saved_bytes, f.logits_bytes;
      x.push_back(c);
      y.push_back(r->m->peak_allocated_bytes - f.static_bytes);
    }
    // Relative to the whole peak: what a user compares with the GPU's memory.
    const Eigen::Index n = static_cast<Eigen::Index>(used.size());
    Eigen::MatrixXd A(n, 3);
    Eigen::VectorXd b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double peak = used[static_cast<size_t>(i)]->m->peak_allocated_bytes;
      A.row(i) = x[static_cast<size_t>(i)].transpose() / peak;
      b(i) = y[static_cast<size_t>(i)] / peak;
    }
    const Eigen::VectorXd m = nnls(A, b);
    view.memory.workspace_bytes = m(0);
    view.memory.saved_scale = m(1);
    if (m(2) > 0) view.memory.logits_scale = m(2);
  }
  // The slack beyond allocated: overhead, per activation byte, per logits tensor.
  std::vector<Eigen::VectorXd> rx;
  std::vector<double> ry;
  for (const Row* r : used) {
    if (!measured(r->m->peak_reserved_bytes)) continue;
    const double alloc = r->m->peak_allocated_bytes;
    rx.push_back((Eigen::VectorXd(3) << 1.0, alloc - r->f.static_bytes, r->f.logits_buffer_bytes).finished());
    ry.push_back(r->m->peak_reserved_bytes - alloc);
  }
  if (ry.size() >= kMinRows) {
    // Absolute, weighted by the reserved peak: the slack is a small part of it.
    const Eigen::Index n = static_cast<Eigen::Index>(ry.size());
    Eigen::MatrixXd A(n, 3);
    Eigen::VectorXd b(n);
    size_t k = 0;
    for (const Row* r : used) {
      if (!measured(r->m->peak_reserved_bytes)) continue;
      const double w = 1.0 / r->m->peak_reserved_bytes;
      A.row(static_cast<Eigen::Index>(k)) = rx[k].transpose() * w;
      b(static_cast<Eigen::Index>(k)) = ry[k] * w;
      ++k;
    }
    const Eigen::VectorXd r = nnls(A, b);
    view.memory.reserved_scale = 1.0;
    view.memory.reserved_overhead_bytes = r(0);
    view.reserved_activation_share = r(1);
    view.reserved_logits_share = r(2);
  }
}

}  // namespace

bool is_stack_fit(const std::vector<Row>& rows) {
  size_t hf = 0;
  for (const Row& r : rows) hf += r.m->workload.stack.kind == model::StackKind::hf_peft;
  if (hf != 0 && hf != rows.size())
    throw CalibrationError(std::to_string(hf) + " of " + std::to_string(rows.size()) +
                           " rows are of the hf-peft stack and the rest of lorasim's: fit one stack at a time "
                           "(the `stack` column, docs/measurements.md)");
  return hf != 0;
}

bool identifies_stack(const std::vector<Row>& rows) {
  std::vector<long long> depths;
  for (const Row& r : rows) depths.push_back(r.m->workload.arch.num_layers);
  std::sort(depths.begin(), depths.end());
  return rows.size() >= kMinStackRows && std::unique(depths.begin(), depths.end()) - depths.begin() >= 2;
}

model::HardwareModel stack_view(const model::HardwareModel& base) { return model::for_stack(base, hf_stack()); }

void fit_stack_full(const std::vector<Row>& rows, model::HardwareModel& view) {
  std::vector<const Row*> plain, ckpt;
  for (const Row& r : rows) (r.f.recompute_ops > 0 ? ckpt : plain).push_back(&r);
  fit_host_and_device(plain, view);
  fit_recompute_share(ckpt, view);
  std::vector<const Row*> all;
  for (const Row& r : rows) all.push_back(&r);
  fit_optimizer_host(all, view);
  fit_memory_terms(all, view);
}

model::StackTerms stack_terms_of(const model::HardwareModel& view, const model::HardwareModel& view_before,
                                 const model::StackTerms& before) {
  model::StackTerms t = before;
  t.host_fixed_s = view.time.host_fixed_s;
  t.host_per_op_s = view.time.host_per_op_s;
  t.recompute_host_share = view.time.recompute_host_share;
  t.optimizer_fixed_s = view.time.optimizer_fixed_s;
  t.optimizer_per_tensor_s = view.time.optimizer_per_tensor_s;
  // The anchored fit scales the GPU's rates of the view by the device scale; the stack keeps
  // the GPU's and carries the scale.
  const double rate_scale = view_before.time.gemm_tflops / view.time.gemm_tflops;
  t.device_scale = view.device_scale * rate_scale;
  t.head_device_scale = view.head_device_scale * rate_scale;
  t.saved_scale = view.memory.saved_scale;
  t.logits_scale = view.memory.logits_scale;
  t.workspace_bytes = view.memory.workspace_bytes;
  t.reserved_scale = view.memory.reserved_scale;
  t.reserved_overhead_bytes = view.memory.reserved_overhead_bytes;
  t.reserved_activation_share = view.reserved_activation_share;
  t.reserved_logits_share = view.reserved_logits_share;
  t.calibrated = true;
  return t;
}

}  // namespace lorasim::calib::detail
