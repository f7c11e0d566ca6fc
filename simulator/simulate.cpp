// Split enumeration, memory filtering and ranking.
#include "simulator/simulate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/checked.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/training_stack.h"
#include "simulator/note_format.h"

namespace lorasim::sim {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  // d <= n / d, not d * d <= n: the square overflows for B near INT64_MAX.
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

namespace {

void validate(const Request& r) {
  if (r.effective_batch < 1)
    throw InputError("effective batch must be a positive number of sequences, got " +
                     std::to_string(r.effective_batch));
  if (r.effective_batch > kMaxEffectiveBatch)
    throw InputError("effective batch " + std::to_string(r.effective_batch) +
                     " is too large: lorasim simulates at most " + std::to_string(kMaxEffectiveBatch) +
                     " (2^40) sequences per optimizer step");
  if (r.steps < 1) throw InputError("steps must be at least 1, got " + std::to_string(r.steps));
  if (r.memory_limit_bytes < 0)
    throw InputError("memory limit must be positive, got " + std::to_string(r.memory_limit_bytes));
  if (!(r.safety_margin >= 0 && r.safety_margin < 1))
    throw InputError("safety margin must be a fraction in [0, 1), got " + std::to_string(r.safety_margin));
  if (r.workload.train.precision == model::Precision::bf16 && !r.hardware.bf16_supported)
    throw InputError("the " + r.hardware.display_name +
                     " has no bf16 support: it trains in fp16 or fp32", "precision");
  r.workload.validate();
  model::require_attention_support(r.hardware, r.workload.stack.attn_impl);
  if (r.fsdp && r.gpus == 1) check_fsdp(r.workload, r.gpus);
  if (r.gpus != 1) {
    data_parallel_cost(r.workload, r.gpus, model::Interconnect{}, 0);  // the GPU count's range
    if (r.fsdp) check_fsdp(r.workload, r.gpus);
    check_divides(r.effective_batch, r.gpus);
    if (!r.measured.empty())
      throw InputError("measured splits of one GPU cannot stand in for a data-parallel prediction: drop them or "
                       "predict one GPU",
                       "gpus");
  }
  check_measured(r.measured, r.effective_batch);
  const model::TrainingSpec& t = r.workload.train;
  const model::LengthDistribution d = t.length_distribution();
  if (!d.one_point() || d.longest_tokens() != t.seq_len ||
      model::padded_length_tokens(t.padding, t.seq_len, d.max_length_tokens()) != t.seq_len)
    throw InputError("data whose micro-batches are not all " + std::to_string(t.seq_len) +
                         "-token rows (their lengths or padding) are simulated by simulate_lengths "
                         "(simulator/lengths_sim.h), not simulate",
                     "lengths");
  model::Checked k;
  k.mul(r.effective_batch, r.workload.train.seq_len);
  if (k.overflowed)
    throw InputError("effective batch " + std::to_string(r.effective_batch) + " x sequence length " +
                     std::to_string(r.workload.train.seq_len) +
                     " tokens per optimizer step does not fit in a 64-bit integer: use a smaller effective "
                     "batch or a shorter sequence length");
}

// "%.0f", not a cast to int64: a profile's byte count may be out of int64's range (1e30).
std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, std::fabs(bytes) < 1e15 * (1 << 20) ? "%.0f MiB" : "%.3g MiB", std::trunc(bytes / (1 << 20)));
  return buf;
}

// "1.5%": a share that needs its decimal.
std::string share(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", fraction * 100);
  return buf;
}

}  // namespace

std::string data_parallel_note(const Result& r, const model::HardwareModel& hw) {
  const DataParallelCost& dp = r.data_parallel;
  const model::Interconnect& ic = r.interconnect;
  char bw[64];
  std::snprintf(bw, sizeof bw, "%g GB/s", ic.allreduce_gbps);
  const bool own = hw.interconnect && *hw.interconnect == ic;
  const std::string over = std::string(" over ") + model::link_name(ic.link) + " at " + bw +
                           (!own ? " (the link's datasheet prior)"
                                 : ic.calibrated ? " (the profile's [interconnect], measured: " + hw.interconnect->source + ")"
                                                 : " (the profile's [interconnect])");
  if (r.fsdp)
    return std::to_string(dp.gpus) + " GPUs, FSDP FULL_SHARD: each GPU holds " +
           mib(r.fsdp_memory.sharded_weights_bytes) + " of sharded frozen weights, the " +
           mib(r.fsdp_memory.root_unit_bytes) + " root unit (embeddings, head) and " +
           std::to_string(kFsdpLayersInFlight) + " gathered layers (" + mib(r.fsdp_memory.layers_in_flight_bytes) +
           "); every layer is all-gathered in the forward and again in the backward" + over +
           ", overlapped with compute but for one layer per pass; a prior not validated on a GPU, off by "
           "~30% or more (docs/data-parallel.md)";
  return std::to_string(dp.gpus) + " GPUs data parallel (DDP): the adapters' " + mib(dp.bucket_memory_bytes) +
         " of fp32 gradients are all-reduced once per step in " + std::to_string(dp.buckets) +
         (dp.buckets == 1 ? " bucket" : " buckets") + over +
         ", overlapped with the last backward; memory is per GPU and holds DDP's copy of the gradients "
         "(docs/data-parallel.md)";
}

std::string fsdp_would_fit_note(const Split& s, int64_t gpus) {
  return "no split fits with the frozen weights replicated on each of the " + std::to_string(gpus) +
         " GPUs; with --fsdp (FULL_SHARD: the weights sharded across them) micro-batch " +
         std::to_string(s.micro_batch) + " x accumulation " + std::to_string(s.accumulation) +
         " fits (worst case " + mib(s.worst_reserved_bytes) + " per GPU)";
}

namespace {

// What every data-parallel step adds on top of one GPU's: the collectives' exposed time, and the
// memory each GPU holds beyond one GPU's peak (negative under FSDP: its shards).
void add_per_gpu(double exposed_s, double memory_bytes, int64_t steps, double tokens_per_step, Split& s) {
  s.step_time_s += exposed_s;
  s.step_time_low_s += exposed_s;
  s.step_time_high_s += exposed_s;
  s.run_time_s = static_cast<double>(steps) * s.step_time_s;
  s.tokens_per_s = tokens_per_step / s.step_time_s;
  s.peak_allocated_bytes += memory_bytes;
  s.peak_reserved_bytes += memory_bytes;
  s.worst_reserved_bytes += memory_bytes;
  s.needed_bytes += memory_bytes;
}

}  // namespace

void add_fsdp(const FsdpMicroBatch& step, const FsdpMemory& m, int64_t steps, double tokens_per_step, Split& s) {
  s.fsdp = true;
  s.fsdp_comm_time_s = step.comm_s;
  s.fsdp_exposed_s = step.exposed_s;
  add_per_gpu(step.exposed_s, m.delta_bytes, steps, tokens_per_step, s);
}

void add_data_parallel(const DataParallelCost& dp, int64_t steps, double tokens_per_step, Split& s) {
  s.gpus = dp.gpus;
  s.allreduce_time_s = dp.allreduce_time_s;
  s.allreduce_exposed_s = dp.allreduce_exposed_s;
  add_per_gpu(dp.allreduce_exposed_s, dp.bucket_memory_bytes, steps, tokens_per_step, s);
}

Result simulate(const Request& r) {
  validate(r);
  const model::CostModel cost(r.workload, r.hardware);
  const double tokens_per_step = static_cast<double>(r.effective_batch) * r.workload.train.seq_len;

  Result out;
  out.memory_limit_bytes = static_cast<double>(r.memory_limit_bytes > 0 ? r.memory_limit_bytes
                                                                         : r.hardware.memory_bytes);
  const model::Coefficients& c = cost.model().c;  // the table's values for the workload's stack
  out.usable_memory_bytes = out.memory_limit_bytes * (1 - r.safety_margin) - c.context_bytes;
  if (out.usable_memory_bytes <= 0)
    throw InputError("no memory is usable: the memory limit of " + mib(out.memory_limit_bytes) + " less the " +
                     percent(r.safety_margin) + " safety margin is below the " +
                     mib(c.context_bytes) + " CUDA context of the " +
                     r.hardware.display_name + ": raise the memory limit");

  const int64_t per_gpu_batch = r.effective_batch / r.gpus;
  if (r.gpus > 1) out.interconnect = interconnect_for(r.hardware, r.link);
  out.fsdp = r.fsdp;
  if (r.fsdp) out.fsdp_memory = fsdp_memory(r.workload, r.gpus);
  for (int64_t b : divisors(per_gpu_batch)) {
    Split s;
    s.micro_batch = b;
    s.accumulation = per_gpu_batch / b;
    s.grad_ckpt = r.workload.train.grad_ckpt;
    const model::MicroBatchTime t = cost.micro_batch(b);
    const model::StepTime st = cost.step(b, s.accumulation);
    s.micro_batch_time_s = t.total_s;
    s.host_time_s = t.host_s;
    s.device_time_s = t.device_s;
    s.host_bound = st.host_bound;
    // The optimizer's visible cost: its dispatch when the host sets the pace, else its kernels.
    s.optimizer_time_s = st.host_bound ? cost.optimizer().host_s : cost.optimizer().device_s;
    s.step_time_s = st.total_s;
    s.step_time_low_s = st.low_s;
    s.step_time_high_s = st.high_s;
    s.run_time_s = static_cast<double>(r.steps) * s.step_time_s;
    s.tokens_per_s = tokens_per_step / s.step_time_s;
    const model::MemoryEstimate m = cost.memory(b);
    // Byte counts are reported as int64; the worst case bounds the other two.
    if (!(m.worst_reserved_bytes <= model::kMaxInt64AsDouble && m.peak_reserved_bytes <= model::kMaxInt64AsDouble))
      throw InputError("a micro-batch of " + std::to_string(b) + (b == 1 ? " sequence of " : " sequences of ") +
                       std::to_string(r.workload.train.seq_len) +
                       " tokens would need more than 8 EiB of memory, beyond what lorasim counts: use a "
                       "smaller effective batch or a shorter sequence length");
    s.peak_allocated_bytes = m.peak_allocated_bytes;
    s.peak_reserved_bytes = m.peak_reserved_bytes;
    s.worst_reserved_bytes = m.worst_reserved_bytes;
    s.needed_bytes = m.worst_reserved_bytes;
    if (r.fsdp) {
      // FULL_SHARD: the gradients are reduce-scattered, not all-reduced in DDP's buckets.
      out.data_parallel = DataParallelCost{};
      out.data_parallel.gpus = r.gpus;
      s.gpus = r.gpus;
      add_fsdp(fsdp_step(r.workload, r.gpus, out.interconnect, t.device_s, cost.micro_batch(b, true).device_s,
                         s.accumulation),
               out.fsdp_memory, r.steps, tokens_per_step, s);
    } else if (r.gpus > 1) {
      // Every GPU runs this split; the step waits for what the last backward does not hide.
      out.data_parallel = data_parallel_cost(r.workload, r.gpus, out.interconnect,
                                             cost.micro_batch(b, s.accumulation > 1).device_s);
      add_data_parallel(out.data_parallel, r.steps, tokens_per_step, s);
    }
    // The expected peak is the prediction; the decision uses the worst case, since running
    // out of memory costs the user far more than a slightly smaller micro-batch.
    s.fits = s.needed_bytes <= out.usable_memory_bytes;
    apply_measured(r.measured, out.memory_limit_bytes - c.context_bytes, r.steps, tokens_per_step, s);
    out.splits.push_back(s);
  }

  std::vector<size_t> order;
  for (size_t i = 0; i < out.splits.size(); ++i)
    if (out.splits[i].fits) order.push_back(i);
  // Fastest first; on equal time the larger accumulation (smaller memory) wins.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return out.splits[a].step_time_s < out.splits[b].step_time_s;
  });
  for (size_t k = 0; k < order.size(); ++k) out.splits[order[k]].rank = static_cast<int>(k + 1);
  if (!order.empty()) out.recommended = order.front();

  const auto measured = std::count_if(out.splits.begin(), out.splits.end(), [](const Split& s) { return s.measured; });
  if (measured)
    out.notes.push_back(std::to_string(measured) + (measured == 1 ? " split was" : " splits were") +
                        " measured: step time and peak are the runs'; such a split fits when its peak plus " +
                        share(kMeasuredPeakRepeatability) + " (the repeatability of a measured peak) stays within " +
                        mib(out.memory_limit_bytes - c.context_bytes) +
                        " (the limit less the CUDA context: a measured peak holds what the safety margin is for)");
  if (r.gpus > 1) out.notes.push_back(data_parallel_note(out, r.hardware));
  if (!r.hardware.calibrated)
    out.notes.push_back("profile '" + r.hardware.name +
                        "' is a datasheet prior, not a calibration: step times may be off by ~" +
                        percent(r.hardware.value("expected_time_error")) + " and memory by ~" +
                        percent(r.hardware.value("expected_memory_error")) +
                        (cost.model().prior.time > 0 ? ", and the range and the worst case say so" : "") +
                        " (run `lorasim calibrate` on this GPU for a calibrated profile)");
  if (!r.hardware.bf16_supported && r.workload.train.precision == model::Precision::fp16)
    out.notes.push_back("the " + r.hardware.display_name + " has no bf16: fp16 mixed precision assumed");
  const model::TrainingStack& stack = model::training_stack(r.workload.stack.kind);
  auto note = [&out](std::string text) {
    if (!text.empty()) out.notes.push_back(std::move(text));
  };
  if (!r.hardware.origin(r.workload.stack.kind).calibrated)
    note(stack.prior_note(r.hardware.name, percent(c.expected_time_error)));
  const model::PriorErrors& prior = cost.model().prior;
  note(stack.memory_note(r.workload.stack, r.hardware.overlap == model::Overlap::max,
                         prior.memory > c.expected_memory_error
                             ? percent(prior.memory) + ": the " + r.hardware.name + " prior's, above the stack's " +
                                   percent(c.expected_memory_error)
                             : percent(c.expected_memory_error)));
  const double family = model::family_memory_error(r.workload.arch);
  if (family > std::max(prior.memory, c.worst_case_margin))
    out.notes.push_back("model_type " + r.workload.arch.model_type + ": no calibration has measured how far the " +
                        "allocator holds this family's memory above its peak allocated, so the worst case adds " +
                        percent(family) + " of the peak reserved (bench/results/h200/archs-run1 measured up to 10%)");
  if (r.workload.train.precision != r.hardware.coefficients_precision)
    out.notes.push_back(std::string("profile rates were fitted in ") +
                        model::precision_name(r.hardware.coefficients_precision) + "; " +
                        model::precision_name(r.workload.train.precision) +
                        " times are scaled by the datasheet peak ratio");
  // Host dispatch speed is the least repeatable part of a step (bench/results/h200/README.md):
  // say so where the recommendation rests on it.
  if (out.recommended && out.splits[*out.recommended].host_bound && r.hardware.overlap == model::Overlap::max)
    out.notes.push_back("the recommended split is host-bound (the CPU's operator dispatch sets its pace): "
                        "such times follow the CPU's speed, which drifts between runs far more than "
                        "device-bound times do (docs/cost-model.md lists the limits)");
  if (std::any_of(out.splits.begin(), out.splits.end(), [](const Split& s) { return s.host_bound; }))
    note(stack.host_bound_note(percent(c.host_spread)));
  // What would help is the caller's to say (cli/no_fit_advice.h decides it once, knowing whether
  // checkpointing was weighed and whether a 4-bit base fits): advice here would contradict it.
  if (!out.recommended)
    out.notes.push_back("no split fits in " + mib(out.usable_memory_bytes) + " usable, not even micro-batch 1");
  if (!out.recommended && r.gpus > 1 && !r.fsdp && !r.workload.train.quantized()) {
    Request sharded = r;
    sharded.fsdp = true;
    const Result f = simulate(sharded);
    if (f.recommended) out.notes.push_back(fsdp_would_fit_note(f.splits[*f.recommended], r.gpus));
  }
  return out;
}

}  // namespace lorasim::sim
