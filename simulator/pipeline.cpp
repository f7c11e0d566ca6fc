// The stages of a simulation, in order (pipeline.h).
#include "simulator/pipeline.h"

#include <algorithm>
#include <random>
#include <string>

#include "model/error.h"
#include "model/lengths.h"
#include "simulator/collectives.h"
#include "simulator/data_parallel.h"
#include "simulator/fsdp.h"
#include "simulator/lengths_sim.h"
#include "simulator/measured_splits.h"
#include "simulator/notes.h"
#include "simulator/padding_advice.h"
#include "simulator/splits.h"
#include "simulator/step_source.h"

namespace lorasim::sim {
namespace {

/// The request of rows of one length that stands for `r`'s micro-batches: `row_tokens` long,
/// every row padded to it.
Request rows_of(const Request& r, int64_t row_tokens) {
  Request q = r;
  q.workload.train.lengths.reset();
  q.workload.train.padding = model::Padding{};
  q.workload.train.seq_len = row_tokens;
  return q;
}

void validate(const Request& r, const Plan& plan) {
  if (plan.widths) {
    const MeasuredWidths& m = *plan.widths;
    model::validate_padded_widths(m.widths);
    if (m.micro_batch < 1 || r.gpus < 1 || r.effective_batch % r.gpus != 0 ||
        (r.effective_batch / r.gpus) % m.micro_batch != 0)
      throw InputError("micro-batch " + std::to_string(m.micro_batch) + " does not divide the effective batch " +
                       std::to_string(r.effective_batch));
    validate_fixed(rows_of(r, model::largest_width_tokens(m.widths)));
    return;
  }
  if (!plan.lengths) return validate_fixed(r);
  if (plan.lengths->sampled_steps < 1)
    throw InputError("sampled steps must be at least 1, got " + std::to_string(plan.lengths->sampled_steps));
  // A row of padded micro-batches names its widths, not the distribution they came from: which
  // split of this data it measured is not known yet.
  if (!r.measured.empty())
    throw InputError("measured splits replace predictions of fixed-length data only, not of data of many lengths",
                     "measured");
  if (r.gpus != 1 || r.fsdp) {
    if (r.fsdp) check_fsdp(r.workload, r.gpus);
    data_parallel_cost(r.workload, r.gpus, model::Interconnect{}, 0);  // the GPU count's range
    check_divides(r.effective_batch, r.gpus);
  }
  const model::LengthDistribution d = r.workload.train.length_distribution();
  const model::Padding padding = r.workload.train.padding;
  model::validate_padding(padding);
  // Every micro-batch is at most the maximum length: one GPU's share in rows that long.
  Request per_gpu = rows_of(r, model::padded_length_tokens(padding, d.max_length_tokens(), d.max_length_tokens()));
  per_gpu.gpus = 1;
  per_gpu.fsdp = false;
  per_gpu.effective_batch = r.effective_batch / r.gpus;
  validate_fixed(per_gpu);
}

/// Ranks the splits that fit by `time(i)`, fastest first, and returns the first. Stable: on
/// equal time the earlier split -- the larger accumulation, then checkpointing off -- wins.
template <class Time>
std::optional<size_t> rank_splits(std::vector<Split>& splits, Time time) {
  std::vector<size_t> order;
  for (size_t i = 0; i < splits.size(); ++i) {
    splits[i].rank = 0;
    if (splits[i].fits) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return time(a) < time(b); });
  for (size_t k = 0; k < order.size(); ++k) splits[order[k]].rank = static_cast<int>(k + 1);
  if (order.empty()) return std::nullopt;
  return order.front();
}

/// Stages 3 to 5 for every GPU step of `steps`: the collectives `c`, the measured runs, the fits
/// in `usable` bytes (a measured peak in `allocator_bytes`: the limit less the context), the ranking. Fills `out`'s splits, lengths figures and recommendation.
void finish_splits(const Request& r, const std::vector<GpuStep>& steps, const Collectives& c, double usable,
                   double allocator_bytes, bool by_epoch, LengthsResult& out) {
  Result& res = out.result;
  res.splits.assign(steps.size(), Split{});
  out.lengths.assign(by_epoch ? steps.size() : 0, LengthFigures{});
  for (size_t i = 0; i < steps.size(); ++i) {
    model::Workload w = r.workload;
    w.train.grad_ckpt = steps[i].split.grad_ckpt;
    LengthFigures f;
    add_collectives(w, c, r.steps, steps[i], res.splits[i], f);
    Split& s = res.splits[i];
    // The expected peak is the prediction; the decision uses the worst case, since running
    // out of memory costs the user far more than a slightly smaller micro-batch.
    s.fits = s.needed_bytes <= usable;
    apply_measured(r.measured, allocator_bytes, r.steps, steps[i].tokens_per_step, s);
    if (by_epoch) out.lengths[i] = std::move(f);
  }
  res.recommended = by_epoch ? rank_splits(res.splits, [&](size_t i) { return out.lengths[i].epoch_time_s; })
                             : rank_splits(res.splits, [&](size_t i) { return res.splits[i].step_time_s; });
}

/// Stage 2: one GPU's step of every split of every setting, in the order the splits are listed
/// (ascending micro-batch; under both settings each micro-batch off, then on).
std::vector<GpuStep> gpu_steps(const Request& r, const Plan& plan, ShapeCounts& shapes, bool& varying) {
  std::vector<bool> settings = {r.workload.train.grad_ckpt};
  if (plan.both_grad_ckpt) settings = {false, true};
  const int64_t per_gpu = r.effective_batch / r.gpus;
  const std::vector<int64_t> bs = plan.widths ? std::vector<int64_t>{plan.widths->micro_batch} : divisors(per_gpu);
  std::vector<GpuStep> steps(bs.size() * settings.size());
  for (size_t k = 0; k < settings.size(); ++k) {
    Request q = r;
    q.workload.train.grad_ckpt = settings[k];
    const auto put = [&](size_t i, GpuStep g) {
      g.split.grad_ckpt = settings[k];
      steps[i * settings.size() + k] = std::move(g);
    };
    if (plan.widths) {
      put(0, widths_step(q, plan.widths->micro_batch, plan.widths->widths, plan.widths->new_shapes_per_step));
    } else if (plan.lengths) {
      // Each setting draws from the seed afresh: both settings of a split see the same micro-batches.
      LengthsSource source(q, *plan.lengths, shapes);
      varying = source.varying();
      std::mt19937_64 rng(plan.lengths->seed);
      for (size_t i = 0; i < bs.size(); ++i) put(i, source.step(bs[i], per_gpu / bs[i], rng));
    } else {
      const model::CostModel cost(q.workload, q.hardware);
      for (size_t i = 0; i < bs.size(); ++i)
        put(i, fixed_step(cost, q.workload.train.seq_len, bs[i], per_gpu / bs[i], r.gpus));
    }
  }
  return steps;
}

}  // namespace

LengthsResult run(const Request& r, const Plan& plan) {
  validate(r, plan);
  const model::StackModel stack = model::stack_model(r.hardware, r.workload.stack.kind);
  LengthsResult out;
  Result& res = out.result;
  res.memory_limit_bytes = memory_limit_bytes(r);
  res.usable_memory_bytes = usable_memory_bytes(r, stack.c);
  ShapeCounts shapes;
  bool varying = false;
  const std::vector<GpuStep> steps = gpu_steps(r, plan, shapes, varying);
  const Collectives collectives = collectives_of(r, r.fsdp);
  res.data_parallel = collectives.data_parallel;
  res.interconnect = collectives.link;
  res.fsdp = r.fsdp;
  res.fsdp_memory = collectives.fsdp_memory;
  const bool by_epoch = plan.lengths.has_value() && !plan.widths;
  const double allocator_bytes = res.memory_limit_bytes - stack.c.context_bytes;
  finish_splits(r, steps, collectives, res.usable_memory_bytes, allocator_bytes, by_epoch, out);
  if (by_epoch) {
    const model::LengthDistribution d = r.workload.train.length_distribution();
    out.rows_per_epoch = model::rows_per_epoch(d, r.workload.train.padding);
  }

  NoteFacts facts;
  facts.lengths = by_epoch;
  facts.varying = varying;
  facts.all_exact = std::all_of(steps.begin(), steps.end(), [](const GpuStep& g) { return !g.exact.values.empty(); });
  res.notes = notes_of(r, stack, res, facts);
  // Nothing fits with the weights on every GPU: would sharding them fit? The same GPU steps
  // under FSDP's collectives.
  if (!res.recommended && r.gpus > 1 && !r.fsdp && !r.workload.train.quantized()) {
    LengthsResult sharded;
    finish_splits(r, steps, collectives_of(r, true), res.usable_memory_bytes, allocator_bytes, by_epoch, sharded);
    if (sharded.result.recommended) {
      const Split& s = sharded.result.splits[*sharded.result.recommended];
      res.notes.push_back({NoteKind::fsdp_would_fit, {static_cast<double>(s.micro_batch),
                                                      static_cast<double>(s.accumulation), s.worst_reserved_bytes}});
    }
  }
  if (plan.advice && by_epoch) out.advice = padding_advice(r, *plan.lengths, out, steps, collectives);
  return out;
}

}  // namespace lorasim::sim
