// Padding advice: the recommended split simulated again under packing and grouping by length.
#include "simulator/padding_advice.h"

#include <cmath>
#include <cstdio>

#include "model/lengths.h"
#include "simulator/grad_ckpt_sim.h"
#include "simulator/note_format.h"

namespace lorasim::sim {
namespace {

// Smaller than sampling noise at the default number of sampled steps is no advice.
constexpr double kMinSaving = 0.01;

std::string seconds(double s) {
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// The split of `res` with `best`'s micro-batch and checkpointing.
const Split* same_split(const LengthsResult& res, const Split& best, size_t& index) {
  for (size_t i = 0; i < res.result.splits.size(); ++i) {
    const Split& s = res.result.splits[i];
    if (s.micro_batch == best.micro_batch && s.grad_ckpt == best.grad_ckpt) {
      index = i;
      return &s;
    }
  }
  return nullptr;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

std::string split_name(const Split& s) {
  return std::to_string(s.micro_batch) + "x" + std::to_string(s.accumulation) + (s.grad_ckpt ? " (checkpointed)" : "");
}

// Under the default allocator the worst case adds its fragmentation bound (docs/lengths.md); a
// faster split it refuses may fit with expandable segments, whose bound is small. The promise
// stays: the note names what it costs.
void allocator_advice(const Request& r, const LengthsOptions& o, const LengthsResult& result, bool both,
                      PaddingAdvice& out) {
  if (r.workload.stack.allocator != model::AllocatorMode::default_segments) return;
  Request expandable = r;
  expandable.workload.stack.allocator = model::AllocatorMode::expandable;
  const LengthsResult res = both ? simulate_lengths_both_grad_ckpt(expandable, o) : simulate_lengths(expandable, o);
  if (!res.result.recommended) return;
  const size_t i = *res.result.recommended;
  const Split& s = res.result.splits[i];
  const Split& best = result.result.splits[*result.result.recommended];
  const double base_epoch_s = result.lengths[*result.result.recommended].epoch_time_s;
  PaddingAlternative alt;
  alt.flag = "--allocator expandable";
  alt.env = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
  alt.micro_batch = s.micro_batch;
  alt.accumulation = s.accumulation;
  alt.grad_ckpt = s.grad_ckpt;
  alt.epoch_time_s = res.lengths[i].epoch_time_s;
  alt.padding_fraction = res.lengths[i].padding_fraction;
  alt.fits = s.fits;
  alt.saving = 1 - alt.epoch_time_s / base_epoch_s;
  if ((s.micro_batch == best.micro_batch && s.grad_ckpt == best.grad_ckpt) || !(alt.saving >= kMinSaving)) return;
  std::string refused;
  for (const Split& d : result.result.splits)
    if (d.micro_batch == s.micro_batch && d.grad_ckpt == s.grad_ckpt)
      refused = " (its worst micro-batch needs " + gib(d.needed_bytes) + " of the " +
                gib(result.result.usable_memory_bytes) + " usable)";
  out.notes.push_back("the default allocator's fragmentation refuses " + split_name(s) + refused + "; with " +
                      alt.env + " (--allocator expandable) it fits and an epoch is " + percent(alt.saving) +
                      " faster (" + seconds(alt.epoch_time_s) + " instead of " + seconds(base_epoch_s) + " at " +
                      split_name(best) + ")");
  out.faster.push_back(alt);
}

}  // namespace

PaddingAdvice padding_advice(const Request& r, const LengthsOptions& o, const LengthsResult& result,
                             bool both_grad_ckpt) {
  PaddingAdvice out;
  if (!result.result.recommended) return out;
  const size_t best_index = *result.result.recommended;
  const Split& best = result.result.splits[best_index];
  for (size_t i = 0; i < result.result.splits.size(); ++i)
    if (result.result.splits[i].rank == 2) out.next_best = i;

  const model::PaddingMode mode = r.workload.train.padding.mode;
  const bool pads = mode == model::PaddingMode::longest || mode == model::PaddingMode::multiple ||
                    mode == model::PaddingMode::max_length;
  Request same = r;
  same.workload.train.grad_ckpt = best.grad_ckpt;
  struct Variant {
    const char* flag;
    Request request;
    LengthsOptions options;
  };
  std::vector<Variant> variants;
  if (pads) {
    Variant packed{"--padding packed", same, o};
    packed.request.workload.train.padding = model::Padding{model::PaddingMode::packed, 0};
    variants.push_back(packed);
  }
  // Grouping only shortens rows that pad to their micro-batch's longest.
  if (!o.group_by_length && (mode == model::PaddingMode::longest || mode == model::PaddingMode::multiple)) {
    Variant grouped{"--group-by-length", same, o};
    grouped.options.group_by_length = true;
    variants.push_back(grouped);
  }
  const double base_epoch_s = result.lengths[best_index].epoch_time_s;
  for (const Variant& v : variants) {
    const LengthsResult res = simulate_lengths(v.request, v.options);
    size_t i = 0;
    const Split* s = same_split(res, best, i);
    if (s == nullptr) continue;
    PaddingAlternative alt;
    alt.flag = v.flag;
    alt.micro_batch = s->micro_batch;
    alt.accumulation = s->accumulation;
    alt.grad_ckpt = s->grad_ckpt;
    alt.epoch_time_s = res.lengths[i].epoch_time_s;
    alt.padding_fraction = res.lengths[i].padding_fraction;
    alt.fits = s->fits;
    alt.saving = 1 - alt.epoch_time_s / base_epoch_s;
    if (!(alt.saving >= kMinSaving)) continue;
    const std::string split = std::to_string(best.micro_batch) + "x" + std::to_string(best.accumulation);
    std::string note = alt.flag + " would make an epoch at " + split + " " + percent(alt.saving) + " faster (" +
                       seconds(alt.epoch_time_s) + " instead of " + seconds(base_epoch_s) + ", " +
                       percent(alt.padding_fraction) + " padding instead of " +
                       percent(result.lengths[best_index].padding_fraction) + ")";
    if (alt.flag == std::string("--padding packed"))
      note += "; TRL's packing=True: each row then holds several sequences, so a step sees more of them";
    else
      note += "; HF's group_by_length=True";
    if (!alt.fits) note += "; but its worst micro-batch does not fit";
    out.notes.push_back(note);
    out.faster.push_back(alt);
  }
  allocator_advice(r, o, result, both_grad_ckpt, out);
  return out;
}

}  // namespace lorasim::sim
