// Several GPUs' step and memory from one GPU's (collectives.h).
#include "simulator/collectives.h"

#include "simulator/data_parallel.h"
#include "simulator/fsdp.h"
#include "simulator/lengths_sim.h"

namespace lorasim::sim {

Collectives collectives_of(const Request& r, bool fsdp) {
  Collectives c;
  c.gpus = r.gpus;
  c.fsdp = fsdp;
  if (r.gpus == 1) return c;
  c.link = interconnect_for(r.hardware, r.link);
  if (fsdp) {
    // FULL_SHARD: the gradients are reduce-scattered, not all-reduced in DDP's buckets.
    c.fsdp_memory = fsdp_memory(r.workload, r.gpus);
    c.data_parallel.gpus = r.gpus;
  } else {
    c.data_parallel = data_parallel_cost(r.workload, r.gpus, c.link, 0);
  }
  return c;
}

void add_collectives(const model::Workload& w, const Collectives& c, int64_t steps, const GpuStep& g, Split& s,
                     LengthFigures& f) {
  s = g.split;
  f = g.lengths;
  const int64_t a = s.accumulation;
  // The step waits for the slowest GPU: over independent draws of one GPU's step where it varies
  // -- exactly where a step is one micro-batch of known widths -- else every GPU's is the same.
  double slowest_s = g.steady_s, slowest_p99_s = g.steady_p99_s;
  if (c.gpus > 1 && g.varies) {
    const bool exact = !g.exact.values.empty();
    slowest_s = exact ? expected_max(g.exact, c.gpus) : expected_max_of_sorted(f.sampled_step_s, c.gpus);
    slowest_p99_s = exact ? max_quantile(g.exact, c.gpus, 0.99) : max_quantile_of_sorted(f.sampled_step_s, c.gpus, 0.99);
  }
  double exposed_s = 0, memory_bytes = 0;
  if (c.fsdp) {
    const FsdpMicroBatch st = fsdp_step(w, c.gpus, c.link, g.first_device_s, g.accumulating_device_s, a);
    s.fsdp = true;
    s.gpus = c.gpus;
    s.fsdp_comm_time_s = st.comm_s;
    s.fsdp_exposed_s = exposed_s = st.exposed_s;
    memory_bytes = c.fsdp_memory.delta_bytes;
  } else if (c.gpus > 1) {
    // The last micro-batch's backward hides the all-reduce.
    const DataParallelCost dp =
        data_parallel_cost(w, c.gpus, c.link, a > 1 ? g.accumulating_device_s : g.first_device_s);
    s.gpus = c.gpus;
    s.allreduce_time_s = dp.allreduce_time_s;
    s.allreduce_exposed_s = exposed_s = dp.allreduce_exposed_s;
    memory_bytes = dp.bucket_memory_bytes;
  }
  // Each GPU meets its own new shapes and the others wait: at most N times one GPU's stalls
  // (exactly so where they fall in different steps, as rare shapes do).
  const double n = static_cast<double>(c.gpus), one_gpu_new_s = f.new_shape_time_s;
  f.new_shapes_per_step *= n;
  f.new_shape_time_s *= n;
  f.new_shapes_per_epoch *= n;
  const double shift_s = (slowest_s - g.steady_s) + (f.new_shape_time_s - one_gpu_new_s) + exposed_s;
  s.step_time_s += shift_s;
  s.step_time_low_s += shift_s;
  s.step_time_high_s += shift_s;
  s.run_time_s = static_cast<double>(steps) * s.step_time_s;
  s.tokens_per_s = g.tokens_per_step / s.step_time_s;
  s.peak_allocated_bytes += memory_bytes;
  s.peak_reserved_bytes += memory_bytes;
  s.worst_reserved_bytes += memory_bytes;
  s.needed_bytes += memory_bytes;
  if (!g.varies) return;
  f.step_time_p99_s = slowest_p99_s + f.new_shape_time_s + exposed_s;
  f.epoch_time_s = static_cast<double>(f.steps_per_epoch) * (slowest_s + exposed_s) +
                   g.new_shape_s * f.new_shapes_per_epoch + f.first_step_s;  // every GPU's process pays it at once
  set_epoch_range(s, f);
}

}  // namespace lorasim::sim
