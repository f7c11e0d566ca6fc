// A quantized base's time terms, each fitted by its own step from the rows of a quantized base
// (the `quant` column) after the stack's other terms are known: dequant_s_per_weight_byte (device
// seconds per stored byte bitsandbytes dequantizes) from the rows whose device side sets the pace,
// host_per_quant_call_s (host seconds per quantized projection call) from those whose host side
// does. Every other term is the stack's, fitted on float rows or kept from the base: a quantized
// row's time mixes both, and only these two terms tell it from a float one.
#include <algorithm>
#include <cstdio>
#include <string>

#include "calibrate/fit_internal.h"
#include "calibrate/nnls.h"
#include "model/cost_model.h"

namespace lorasim::calib::detail {
namespace {

// One quantized row's step at the view with both quant terms at 0, and each term's regressor per
// step (the device one scaled by device_scale, as the device terms are).
struct QuantPoint {
  StepParts at0;
  double host_x = 0, device_x = 0;
};

QuantPoint point(const Row& r, const model::StackModel& view) {
  model::StackModel at0 = view;
  at0.c.host_per_quant_call_s = at0.c.dequant_s_per_weight_byte = 0;
  const double a = static_cast<double>(r.m->accumulation);
  return {step_parts(r, at0), a * r.f.quant_linear_calls, a * view.c.device_scale * r.f.dequant_weight_bytes};
}

// theta of y - base = theta x through 0, relative to y; NNLS: a term never lowers a prediction.
struct Through0 {
  double num = 0, den = 0;
  int n = 0;
  void add(double y, double base, double x) {
    num += (y - base) * x / (y * y);
    den += x * x / (y * y);
    ++n;
  }
  double theta() const { return den > 0 ? std::max(0.0, num / den) : 0.0; }
};

}  // namespace

bool quantized(const Row& r) { return model::is_quantized(r.m->workload.train.weight_storage()); }

void fit_quant(const std::vector<Row>& rows, model::StackModel& view, std::vector<std::string>& notes) {
  const model::Coefficient* dq = model::find_coefficient("dequant_s_per_weight_byte");
  const model::Coefficient* hq = model::find_coefficient("host_per_quant_call_s");
  if (!dq->owned_by(view.stack) || !hq->owned_by(view.stack)) return;
  std::vector<const Row*> q;
  for (const Row& r : rows)
    if (quantized(r) && !varied_widths(r)) q.push_back(&r);
  if (q.empty()) return;
  std::vector<QuantPoint> pts;
  for (const Row* r : q) pts.push_back(point(*r, view));
  double th = view.c.host_per_quant_call_s, td = view.c.dequant_s_per_weight_byte;
  int host_rows = 0, device_rows = 0;
  if (view.overlap == model::Overlap::sum) {
    // Host and device add (the CPU): one two-column problem over every row, relative to its step.
    Eigen::MatrixXd A(static_cast<Eigen::Index>(pts.size()), 2);
    Eigen::VectorXd b(A.rows());
    for (Eigen::Index i = 0; i < A.rows(); ++i) {
      const QuantPoint& p = pts[static_cast<size_t>(i)];
      A(i, 0) = p.host_x / p.at0.y;
      A(i, 1) = p.device_x / p.at0.y;
      b(i) = (p.at0.y - p.at0.host - p.at0.device) / p.at0.y;
    }
    // The calls and the stored bytes both follow the depth: on rows of one architecture the two
    // columns are proportional and the rows cannot split the sum between them (the anchored fits'
    // conditioning test, columns at unit norm).
    Eigen::MatrixXd unit = A;
    for (Eigen::Index k = 0; k < unit.cols(); ++k)
      if (unit.col(k).norm() > 0) unit.col(k) /= unit.col(k).norm();
    const Eigen::VectorXd sv = Eigen::JacobiSVD<Eigen::MatrixXd>(unit).singularValues();
    if (pts.size() >= kMinQuantRows && sv(sv.size() - 1) >= kMinConditioning * sv(0)) {
      const Eigen::VectorXd t = nnls(A, b);
      th = t(0);
      td = t(1);
      host_rows = device_rows = static_cast<int>(pts.size());
    } else if (pts.size() >= kMinQuantRows) {
      notes.push_back("host_per_quant_call_s and dequant_s_per_weight_byte kept: host and device time add on this "
                      "device, and the rows' quantized calls and bytes are proportional (one architecture), so the "
                      "rows cannot tell the two apart");
      return;
    }
  } else {
    // max(H, D) + coupling min(H, D): rows go to the side that sets their time at the current
    // terms, each side's term is solved through 0 with the other side's coupling held, until the
    // assignment is stable.
    std::vector<bool> host(pts.size());
    for (size_t i = 0; i < pts.size(); ++i) host[i] = pts[i].at0.host + th * pts[i].host_x > pts[i].at0.device + td * pts[i].device_x;
    for (int iter = 0; iter < kJointIterations; ++iter) {
      Through0 h, d;
      for (size_t i = 0; i < pts.size(); ++i) {
        const QuantPoint& p = pts[i];
        const double H = p.at0.host + th * p.host_x, D = p.at0.device + td * p.device_x;
        if (host[i] && p.host_x > 0) h.add(p.at0.y, p.at0.host + p.at0.coupling * D, p.host_x);
        if (!host[i] && p.device_x > 0) d.add(p.at0.y, p.at0.device + p.at0.coupling * H, p.device_x);
      }
      if (h.n >= static_cast<int>(kMinQuantRows)) th = h.theta();
      if (d.n >= static_cast<int>(kMinQuantRows)) td = d.theta();
      host_rows = h.n;
      device_rows = d.n;
      std::vector<bool> next(pts.size());
      for (size_t i = 0; i < pts.size(); ++i)
        next[i] = pts[i].at0.host + th * pts[i].host_x > pts[i].at0.device + td * pts[i].device_x;
      if (next == host) break;
      host = next;
    }
  }
  // A term moves only where it shows: at the larger of its prior and its fit, at least the
  // stack's spread of that side (host_spread, device_spread: how far a row's time deviates from
  // the prediction anyway) on some row of its side. Smaller, the rows cannot place it.
  auto largest_share = [&](bool host_side, double theta) {
    double most = 0;
    for (const QuantPoint& p : pts) {
      const double H = p.at0.host + th * p.host_x, D = p.at0.device + td * p.device_x;
      if (view.overlap == model::Overlap::max && (H > D) != host_side) continue;
      most = std::max(most, theta * (host_side ? p.host_x : p.device_x) / p.at0.y);
    }
    return most;
  };
  const std::string of = " of " + std::to_string(q.size()) + " quantized rows";
  auto settle = [&](const model::Coefficient* k, double fitted, int used, bool host_side, double spread) {
    const std::string side = host_side ? "host" : "device";
    if (used < static_cast<int>(kMinQuantRows)) {
      notes.push_back(std::string(k->name) + " kept: " + std::to_string(used) + " " + side + "-bound" + of + " (" +
                      std::to_string(kMinQuantRows) + " needed)");
      return;
    }
    const double share = largest_share(host_side, std::max(fitted, k->in(view.stack).prior));
    if (share < spread) {
      notes.push_back(std::string(k->name) + " kept: fitted " + fixed3(fitted) + " from " + std::to_string(used) + " " +
                      side + "-bound" + of + ", but the term is at most " + fixed3(100 * share) +
                      "% of their time, under the " + side + "'s spread " + fixed3(100 * spread) + "%");
      return;
    }
    k->of(view.c) = fitted;
    notes.push_back(std::string(k->name) + " " + fixed3(fitted) + " s from " + std::to_string(used) + " " + side +
                    "-bound" + of);
  };
  const double th_fit = th, td_fit = td;
  th = view.c.host_per_quant_call_s;  // the shares are judged at the base's assignment of rows
  td = view.c.dequant_s_per_weight_byte;
  settle(hq, th_fit, host_rows, true, view.c.host_spread);
  settle(dq, td_fit, device_rows, false, view.c.device_spread);
}

}  // namespace lorasim::calib::detail
