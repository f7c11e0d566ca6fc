// A run's recorded padded widths, priced width by width (measured_lengths.h).
#include "simulator/measured_lengths.h"

#include <algorithm>

#include "model/error.h"
#include "simulator/lengths_sim.h"
#include "simulator/padded_cost.h"

namespace lorasim::sim {

Result simulate_measured_widths(const Request& r, int64_t micro_batch, const model::PaddedWidths& widths,
                                double new_shapes_per_step) {
  model::validate_padded_widths(widths);
  if (micro_batch < 1 || r.gpus < 1 || r.effective_batch % r.gpus != 0 || (r.effective_batch / r.gpus) % micro_batch != 0)
    throw InputError("micro-batch " + std::to_string(micro_batch) + " does not divide the effective batch " +
                     std::to_string(r.effective_batch));
  const int64_t largest = model::largest_width_tokens(widths);
  Request fixed = r;
  fixed.workload.train.lengths.reset();
  fixed.workload.train.padding = model::Padding{};
  fixed.workload.train.seq_len = largest;
  Result res = simulate(fixed);  // validates the request; the limit and usable memory
  auto it = std::find_if(res.splits.begin(), res.splits.end(),
                         [&](const Split& s) { return s.micro_batch == micro_batch; });
  Split s = *it;

  PaddedLengthCosts costs(r.workload, r.hardware);
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
  s.step_time_s = st.total_s + new_shapes_s;
  s.step_time_low_s = st.low_s + new_shapes_s;
  s.step_time_high_s = st.high_s + new_shapes_s;
  s.host_bound = st.host_bound;
  s.optimizer_time_s = s.host_bound ? opt.host_s : opt.device_s;
  s.micro_batch_time_s = first_total / count;
  s.host_time_s = first_host / count;
  s.device_time_s = first_device / count;
  s.run_time_s = static_cast<double>(r.steps) * s.step_time_s;
  // The tensors' tokens: the real ones are the run's (its real_tokens), not the widths'.
  s.tokens_per_s = static_cast<double>(b * a) * model::mean_width_tokens(widths) / s.step_time_s;

  const model::MemoryEstimate m = at_largest.memory(b);
  const bool varying = widths.size() > 1;
  const model::AllocatorMode allocator = r.workload.stack.allocator;
  const model::Coefficients& coef = at_largest.model().c;
  const double activations = std::max(0.0, m.peak_allocated_bytes - costs.static_bytes());
  set_worst_micro_batch_memory(coef, allocator, m, activations, varying, s);
  const double tokens_per_step = static_cast<double>(b * a * r.gpus) * model::mean_width_tokens(widths);
  if (r.fsdp)
    add_fsdp(fsdp_step(r.workload, r.gpus, res.interconnect, first_device / count, acc_device / count, a),
             res.fsdp_memory, r.steps, tokens_per_step, s);
  else if (r.gpus > 1)
    add_data_parallel(res.data_parallel, r.steps, tokens_per_step, s);
  s.fits = s.needed_bytes <= res.usable_memory_bytes;
  s.rank = s.fits ? 1 : 0;
  res.splits = {s};
  res.recommended.reset();
  if (s.fits) res.recommended = 0;
  return res;
}

}  // namespace lorasim::sim
