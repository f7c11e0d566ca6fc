// Data of many lengths on several GPUs: the step as the slowest of N GPUs' steps (lengths_dp.h).
#include "simulator/lengths_dp.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/error.h"
#include "model/lengths.h"
#include "model/new_shapes.h"
#include "simulator/padded_cost.h"

namespace lorasim::sim {

double expected_max_of_sorted(const std::vector<double>& sorted, int64_t ranks) {
  if (sorted.empty()) return 0;
  const double m = static_cast<double>(sorted.size()), n = static_cast<double>(ranks);
  double e = 0, below = 0;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const double at = std::pow(static_cast<double>(k + 1) / m, n);
    e += sorted[k] * (at - below);
    below = at;
  }
  return e;
}

double max_quantile_of_sorted(const std::vector<double>& sorted, int64_t ranks, double q) {
  if (sorted.empty()) return 0;
  const double m = static_cast<double>(sorted.size());
  const double k = std::ceil(m * std::pow(q, 1.0 / static_cast<double>(ranks)) - 1e-9);
  return sorted[static_cast<size_t>(std::clamp(k, 1.0, m)) - 1];
}

double expected_max(const Ladder& l, int64_t ranks) {
  double e = 0, below = 0;
  for (size_t i = 0; i < l.values.size(); ++i) {
    const double at = std::pow(l.cdf[i], static_cast<double>(ranks));
    e += l.values[i] * (at - below);
    below = at;
  }
  return e;
}

double max_quantile(const Ladder& l, int64_t ranks, double q) {
  for (size_t i = 0; i < l.values.size(); ++i)
    if (std::pow(l.cdf[i], static_cast<double>(ranks)) >= q) return l.values[i];
  return l.values.empty() ? 0 : l.values.back();
}

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// One GPU's step of one micro-batch padded to its longest, as a ladder over the data's bins:
/// P(the longest of b <= l_i) = F(l_i)^b. Empty where it does not apply (accumulation, other
/// paddings, group_by_length) or where the step is not monotone in the length, so that the
/// slowest GPU need not be the one with the longest micro-batch.
Ladder one_micro_batch_ladder(const Request& r, const LengthsOptions& o, PaddedLengthCosts& cache, int64_t b,
                              int64_t a) {
  using model::PaddingMode;
  const model::Padding p = r.workload.train.padding;
  if (a != 1 || o.group_by_length || (p.mode != PaddingMode::longest && p.mode != PaddingMode::multiple)) return {};
  const model::LengthDistribution d = r.workload.train.length_distribution();
  const double n = static_cast<double>(d.sequences());
  Ladder l;
  for (size_t i = 0; i < d.bins().size(); ++i) {
    const int64_t w = model::padded_length_tokens(p, d.bins()[i].length_tokens, d.max_length_tokens());
    const model::CostModel& c = cache.at(w);
    const model::MicroBatchTime t = c.micro_batch(b, false);
    const double v = c.step_of(t.host_s + c.optimizer().host_s, t.device_s + c.optimizer().device_s).total_s;
    if (!l.values.empty() && v < l.values.back()) return {};
    l.values.push_back(v);
    l.cdf.push_back(std::pow(static_cast<double>(d.cumulative_count(i)) / n, static_cast<double>(b)));
  }
  return l;
}

}  // namespace

LengthsResult simulate_lengths_data_parallel(const Request& r, const LengthsOptions& o) {
  const int64_t gpus = r.gpus;
  if (r.fsdp) check_fsdp(r.workload, gpus);
  data_parallel_cost(r.workload, gpus, model::Interconnect{}, 0);  // the GPU count's range
  check_divides(r.effective_batch, gpus);
  Request per_gpu = r;
  per_gpu.gpus = 1;
  per_gpu.fsdp = false;
  per_gpu.effective_batch = r.effective_batch / gpus;
  LengthsResult out = simulate_lengths(per_gpu, o);
  Result& res = out.result;
  res.interconnect = interconnect_for(r.hardware, r.link);
  res.fsdp = r.fsdp;
  if (r.fsdp) res.fsdp_memory = fsdp_memory(r.workload, gpus);

  const model::LengthDistribution d = r.workload.train.length_distribution();
  const model::Padding padding = r.workload.train.padding;
  PaddedLengthCosts cache(r.workload, r.hardware);
  const double new_shape_s = cache.at(1).model().c.new_shape_s;
  const double n = static_cast<double>(gpus);
  const int64_t steps_per_epoch = (out.rows_per_epoch + r.effective_batch - 1) / r.effective_batch;
  bool all_exact = true;
  for (size_t i = 0; i < res.splits.size(); ++i) {
    Split& s = res.splits[i];
    LengthFigures& f = out.lengths[i];
    const int64_t b = s.micro_batch, a = s.accumulation;
    const Ladder exact = one_micro_batch_ladder(r, o, cache, b, a);
    all_exact = all_exact && !exact.values.empty();
    const double slowest_s =
        exact.values.empty() ? expected_max_of_sorted(f.sampled_step_s, gpus) : expected_max(exact, gpus);
    const double slowest_p99_s = exact.values.empty() ? max_quantile_of_sorted(f.sampled_step_s, gpus, 0.99)
                                                      : max_quantile(exact, gpus, 0.99);
    // Each GPU meets its own new shapes and the others wait: at most N times one GPU's stalls
    // (exactly so where they fall in different steps, as rare shapes do).
    f.new_shapes_per_step *= n;
    f.new_shape_time_s *= n;
    const double per_rank_new = std::max(
        0.0, model::expected_new_shapes(d, padding, b, steps_per_epoch * a, o.group_by_length) - 1);
    f.new_shapes_per_epoch = n * per_rank_new;
    double exposed_s = 0;
    s.gpus = gpus;
    if (r.fsdp) {
      const FsdpMicroBatch st = fsdp_step(r.workload, gpus, res.interconnect, s.device_time_s, s.device_time_s, a);
      s.fsdp = true;
      s.fsdp_comm_time_s = st.comm_s;
      s.fsdp_exposed_s = exposed_s = st.exposed_s;
      res.data_parallel = DataParallelCost{};
      res.data_parallel.gpus = gpus;
    } else {
      // The mean micro-batch's backward hides the all-reduce.
      res.data_parallel = data_parallel_cost(r.workload, gpus, res.interconnect, s.device_time_s);
      s.allreduce_time_s = res.data_parallel.allreduce_time_s;
      s.allreduce_exposed_s = exposed_s = res.data_parallel.allreduce_exposed_s;
    }
    const double step_s = slowest_s + f.new_shape_time_s + exposed_s;
    const double shift_s = step_s - s.step_time_s;
    const double real_tokens_per_step = s.tokens_per_s * s.step_time_s * n;  // every GPU's
    s.step_time_s = step_s;
    s.step_time_low_s += shift_s;
    s.step_time_high_s += shift_s;
    s.run_time_s = static_cast<double>(r.steps) * step_s;
    s.tokens_per_s = real_tokens_per_step / step_s;
    f.step_time_p99_s = slowest_p99_s + f.new_shape_time_s + exposed_s;
    f.steps_per_epoch = steps_per_epoch;
    f.epoch_time_s = static_cast<double>(steps_per_epoch) * (slowest_s + exposed_s) + new_shape_s * f.new_shapes_per_epoch +
                     f.first_step_s;  // every GPU's process pays it at once
    set_epoch_range(s, f);
    const double memory_bytes = r.fsdp ? res.fsdp_memory.delta_bytes : res.data_parallel.bucket_memory_bytes;
    s.peak_allocated_bytes += memory_bytes;
    s.peak_reserved_bytes += memory_bytes;
    s.worst_reserved_bytes += memory_bytes;
    s.needed_bytes += memory_bytes;
    s.fits = s.needed_bytes <= res.usable_memory_bytes;
  }

  rank_by_epoch(out);

  std::vector<std::string> notes;
  const std::string no_fit = "no split's worst micro-batch";
  for (const auto& note : res.notes)
    if (!starts_with(note, no_fit.c_str()) && !starts_with(note, "the recommended split is host-bound")) notes.push_back(note);
  notes.insert(notes.begin(), data_parallel_note(res, r.hardware));
  notes.push_back("each of the " + std::to_string(gpus) +
                  " GPUs draws and pads its own micro-batches and the step waits for the slowest: the step is the "
                  "expected maximum over the GPUs of one GPU's step (" +
                  (all_exact ? std::string("exact") : std::string("from the sampled steps where a step holds more than one micro-batch")) +
                  "), and each GPU's new shapes stall them all (docs/lengths.md)");
  if (res.recommended && res.splits[*res.recommended].host_bound && r.hardware.overlap == model::Overlap::max)
    notes.push_back("the recommended split is host-bound (the CPU's operator dispatch sets its pace): "
                    "such times follow the CPU's speed, which drifts between runs far more than "
                    "device-bound times do (docs/cost-model.md lists the limits)");
  if (!res.recommended) {
    notes.push_back(no_fit + " (its longest sequences together) fits in the usable memory of a GPU: "
                    "gradient checkpointing, a shorter maximum length, a smaller LoRA rank or a GPU with more "
                    "memory lower what it needs");
    if (!r.fsdp && !r.workload.train.quantized()) {
      Request sharded = r;
      sharded.fsdp = true;
      const LengthsResult f = simulate_lengths_data_parallel(sharded, o);
      if (f.result.recommended) notes.push_back(fsdp_would_fit_note(f.result.splits[*f.result.recommended], gpus));
    }
  }
  res.notes = notes;
  return out;
}

}  // namespace lorasim::sim
