// Steps of one length, and of a run's recorded widths (step_source.h).
#include "simulator/step_source.h"

#include <algorithm>

#include "simulator/lengths_sim.h"
#include "simulator/padded_cost.h"
#include "simulator/splits.h"

namespace lorasim::sim {

GpuStep fixed_step(const model::CostModel& cost, int64_t seq_len, int64_t b, int64_t a, int64_t gpus) {
  GpuStep g;
  Split& s = g.split;
  s.micro_batch = b;
  s.accumulation = a;
  const model::MicroBatchTime t = cost.micro_batch(b);
  const model::StepTime st = cost.step(b, a);
  s.micro_batch_time_s = t.total_s;
  s.host_time_s = t.host_s;
  s.device_time_s = t.device_s;
  s.host_bound = st.host_bound;
  // The optimizer's visible cost: its dispatch when the host sets the pace, else its kernels.
  s.optimizer_time_s = st.host_bound ? cost.optimizer().host_s : cost.optimizer().device_s;
  s.step_time_s = st.total_s;
  s.step_time_low_s = st.low_s;
  s.step_time_high_s = st.high_s;
  g.steady_s = st.total_s;
  g.first_device_s = t.device_s;
  g.accumulating_device_s = cost.micro_batch(b, true).device_s;
  g.tokens_per_step = static_cast<double>(b * a * gpus) * static_cast<double>(seq_len);
  const model::MemoryEstimate m = cost.memory(b);
  check_byte_count(m, b, seq_len);
  g.worst_memory = m;
  s.peak_allocated_bytes = m.peak_allocated_bytes;
  s.peak_reserved_bytes = m.peak_reserved_bytes;
  s.worst_reserved_bytes = m.worst_reserved_bytes;
  s.needed_bytes = m.worst_reserved_bytes;
  return g;
}

GpuStep widths_step(const Request& r, int64_t micro_batch, const model::PaddedWidths& widths,
                    double new_shapes_per_step) {
  PaddedLengthCosts costs(r.workload, r.hardware);
  const int64_t largest = model::largest_width_tokens(widths);
  const int64_t b = micro_batch, a = r.effective_batch / r.gpus / micro_batch;  // per GPU
  double first_host = 0, first_device = 0, first_total = 0, acc_host = 0, acc_device = 0;
  for (const model::PaddedWidth& w : widths) {
    const model::CostModel& c = costs.at(w.width_tokens);
    const double n = static_cast<double>(w.micro_batches);
    const model::MicroBatchTime first = c.micro_batch(b, false), acc = c.micro_batch(b, true);
    first_host += n * first.host_s;
    first_device += n * first.device_s;
    first_total += n * first.total_s;
    acc_host += n * acc.host_s;
    acc_device += n * acc.device_s;
  }
  const double count = static_cast<double>(model::micro_batch_count(widths));
  const model::CostModel& at_largest = costs.at(largest);
  const model::OptimizerTime& opt = at_largest.optimizer();
  const double rest = static_cast<double>(a - 1);
  const double host = first_host / count + rest * (acc_host / count) + opt.host_s;
  const double device = first_device / count + rest * (acc_device / count) + opt.device_s;
  const model::StepTime st = at_largest.step_of(host, device);
  const double new_shapes_s = at_largest.model().c.new_shape_s * new_shapes_per_step;
  GpuStep g;
  Split& s = g.split;
  s.micro_batch = b;
  s.accumulation = a;
  s.grad_ckpt = r.workload.train.grad_ckpt;
  s.step_time_s = st.total_s + new_shapes_s;
  s.step_time_low_s = st.low_s + new_shapes_s;
  s.step_time_high_s = st.high_s + new_shapes_s;
  s.host_bound = st.host_bound;
  s.optimizer_time_s = s.host_bound ? opt.host_s : opt.device_s;
  s.micro_batch_time_s = first_total / count;
  s.host_time_s = first_host / count;
  s.device_time_s = first_device / count;
  g.steady_s = s.step_time_s;  // one GPU's run as recorded: nothing to take the slowest of
  g.first_device_s = first_device / count;
  g.accumulating_device_s = acc_device / count;
  // The tensors' tokens: the real ones are the run's (its real_tokens), not the widths'.
  g.tokens_per_step = static_cast<double>(b * a * r.gpus) * model::mean_width_tokens(widths);

  const model::MemoryEstimate m = at_largest.memory(b);
  check_byte_count(m, b, largest);
  g.worst_memory = m;
  const double activations = std::max(0.0, m.peak_allocated_bytes - costs.static_bytes());
  // The run's own widths say how often its micro-batches had the largest.
  set_worst_micro_batch_memory(at_largest.model().c, r.workload, r.workload.stack.allocator, m, activations,
                               {widths.size() > 1, model::largest_width_share(widths)}, s);
  return g;
}

}  // namespace lorasim::sim
