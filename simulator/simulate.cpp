// The simulator's questions as plans of the one pipeline (simulate.h).
#include "simulator/simulate.h"

namespace lorasim::sim {

Result simulate(const Request& r) { return run(r, Plan{}).result; }

Result simulate_both_grad_ckpt(const Request& r) {
  Plan p;
  p.both_grad_ckpt = true;
  return run(r, p).result;
}

LengthsResult simulate_lengths(const Request& r, const LengthsOptions& options) {
  Plan p;
  p.lengths = options;
  return run(r, p);
}

LengthsResult simulate_lengths_both_grad_ckpt(const Request& r, const LengthsOptions& options) {
  Plan p;
  p.both_grad_ckpt = true;
  p.lengths = options;
  return run(r, p);
}

Result simulate_measured_widths(const Request& r, int64_t micro_batch, const model::PaddedWidths& widths,
                                double new_shapes_per_step) {
  Plan p;
  p.widths = MeasuredWidths{micro_batch, widths, new_shapes_per_step};
  return run(r, p).result;
}

}  // namespace lorasim::sim
