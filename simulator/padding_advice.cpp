// The recommendation's padding advice (padding_advice.h).
#include "simulator/padding_advice.h"

#include <algorithm>
#include <optional>
#include <random>

#include "model/lengths.h"
#include "simulator/lengths_sim.h"
#include "simulator/splits.h"

namespace lorasim::sim {
namespace {

// Smaller than sampling noise at the default number of sampled steps is no advice.
constexpr double kMinSaving = 0.01;

/// The split `best` of `r` (its checkpointing) drawn as simulate_lengths(r, o) draws it: the
/// splits before it in its setting take their draws from the seed first.
PaddingAlternative redraw(const Request& r, const LengthsOptions& o, const Split& best, const Collectives& c,
                          double usable) {
  Request q = r;
  q.workload.train.grad_ckpt = best.grad_ckpt;
  ShapeCounts shapes;
  LengthsSource source(q, o, shapes);
  std::mt19937_64 rng(o.seed);
  const int64_t per_gpu = r.effective_batch / r.gpus;
  for (int64_t b : divisors(per_gpu)) {
    if (b == best.micro_batch) break;
    source.skip_draws(b, per_gpu / b, rng);
  }
  const GpuStep g = source.step(best.micro_batch, best.accumulation, rng);
  Split s;
  LengthFigures f;
  add_collectives(q.workload, c, r.steps, g, s, f);
  PaddingAlternative alt;
  alt.micro_batch = s.micro_batch;
  alt.accumulation = s.accumulation;
  alt.grad_ckpt = s.grad_ckpt;
  alt.epoch_time_s = f.epoch_time_s;
  alt.padding_fraction = f.padding_fraction;
  alt.fits = s.needed_bytes <= usable;
  return alt;
}

// Under the default allocator the worst case adds its fragmentation bound (docs/lengths.md); a
// faster split it refuses may fit with expandable segments, whose bound is small. Only memory
// changes: the same steps, their memory under expandable segments, ranked again.
void allocator_advice(const Request& r, const LengthsResult& res, const std::vector<GpuStep>& steps,
                      const Collectives& c, PaddingAdvice& out) {
  if (r.workload.stack.allocator != model::AllocatorMode::default_segments) return;
  const model::Coefficients coef = model::stack_model(r.hardware, r.workload.stack.kind).c;
  const bool varying = shapes_vary(r.workload.train.length_distribution(), r.workload.train.padding);
  const double delta = c.fsdp ? c.fsdp_memory.delta_bytes : c.gpus > 1 ? c.data_parallel.bucket_memory_bytes : 0;
  std::optional<size_t> first;
  for (size_t i = 0; i < steps.size(); ++i) {
    Split s;
    set_worst_micro_batch_memory(coef, r.workload, model::AllocatorMode::expandable, steps[i].worst_memory,
                                 res.lengths[i].activation_bytes, {varying, res.lengths[i].worst_width_reach}, s);
    if (!(s.needed_bytes + delta <= res.result.usable_memory_bytes)) continue;
    // The fastest that fits; on equal time the earlier, as the ranking keeps it.
    if (!first || res.lengths[i].epoch_time_s < res.lengths[*first].epoch_time_s) first = i;
  }
  if (!first) return;
  const Split& s = res.result.splits[*first];
  const Split& best = res.result.splits[*res.result.recommended];
  PaddingAlternative alt;
  alt.flag = "--allocator expandable";
  alt.env = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
  alt.micro_batch = s.micro_batch;
  alt.accumulation = s.accumulation;
  alt.grad_ckpt = s.grad_ckpt;
  alt.epoch_time_s = res.lengths[*first].epoch_time_s;
  alt.padding_fraction = res.lengths[*first].padding_fraction;
  alt.fits = true;
  alt.saving = 1 - alt.epoch_time_s / res.lengths[*res.result.recommended].epoch_time_s;
  alt.refused_needed_bytes = s.needed_bytes;
  if ((s.micro_batch == best.micro_batch && s.grad_ckpt == best.grad_ckpt) || !(alt.saving >= kMinSaving)) return;
  out.faster.push_back(alt);
}

}  // namespace

PaddingAdvice padding_advice(const Request& r, const LengthsOptions& o, const LengthsResult& res,
                             const std::vector<GpuStep>& steps, const Collectives& c) {
  PaddingAdvice out;
  if (!res.result.recommended) return out;
  const size_t best_index = *res.result.recommended;
  const Split& best = res.result.splits[best_index];
  for (size_t i = 0; i < res.result.splits.size(); ++i)
    if (res.result.splits[i].rank == 2) out.next_best = i;

  const model::PaddingMode mode = r.workload.train.padding.mode;
  const bool pads = mode == model::PaddingMode::longest || mode == model::PaddingMode::multiple ||
                    mode == model::PaddingMode::max_length;
  const double base_epoch_s = res.lengths[best_index].epoch_time_s;
  const auto consider = [&](const char* flag, const Request& q, const LengthsOptions& qo) {
    PaddingAlternative alt = redraw(q, qo, best, c, res.result.usable_memory_bytes);
    alt.flag = flag;
    alt.saving = 1 - alt.epoch_time_s / base_epoch_s;
    if (alt.saving >= kMinSaving) out.faster.push_back(alt);
  };
  if (pads) {
    Request packed = r;
    packed.workload.train.padding = model::Padding{model::PaddingMode::packed, 0};
    consider("--padding packed", packed, o);
  }
  // Grouping only shortens rows that pad to their micro-batch's longest.
  if (!o.group_by_length && (mode == model::PaddingMode::longest || mode == model::PaddingMode::multiple)) {
    LengthsOptions grouped = o;
    grouped.group_by_length = true;
    consider("--group-by-length", r, grouped);
  }
  allocator_advice(r, res, steps, c, out);
  return out;
}

}  // namespace lorasim::sim
