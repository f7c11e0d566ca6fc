// A measured row's step as the anchored time fit sees it (calibrate/fit_internal.h): host and
// device seconds at the base profile, over the row's padded widths where it recorded them.
#include "calibrate/fit_internal.h"
#include "model/cost_model.h"

namespace lorasim::calib::detail {

StepParts step_parts(const Row& r, const model::StackModel& hw) {
  const Measurement& m = *r.m;
  const double coupling = model::overlap_coupling(r.f.host_ops, hw.c);
  if (m.padded_lengths.empty()) {
    const model::StepTime s = model::CostModel(m.workload, hw).step(m.micro_batch, m.accumulation);
    return {s.host_s, s.device_s, coupling, m.step_time_s};
  }
  double first_h = 0, first_d = 0, acc_h = 0, acc_d = 0, n = 0;
  model::OptimizerTime opt;
  for (const model::PaddedWidth& w : m.padded_lengths) {
    model::Workload at = m.workload;
    at.train.seq_len = w.width_tokens;
    const model::CostModel c(at, hw);
    const double k = static_cast<double>(w.micro_batches);
    const model::MicroBatchTime t0 = c.micro_batch(m.micro_batch, false), t1 = c.micro_batch(m.micro_batch, true);
    first_h += k * t0.host_s;
    first_d += k * t0.device_s;
    acc_h += k * t1.host_s;
    acc_d += k * t1.device_s;
    n += k;
    opt = c.optimizer();
  }
  const double rest = static_cast<double>(m.accumulation - 1);
  const double new_shapes = measured(m.new_shapes_per_step) ? m.new_shapes_per_step : 0;
  return {first_h / n + rest * acc_h / n + opt.host_s, first_d / n + rest * acc_d / n + opt.device_s, coupling,
          m.step_time_s - hw.c.new_shape_s * new_shapes};
}


}  // namespace lorasim::calib::detail
