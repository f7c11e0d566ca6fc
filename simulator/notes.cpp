// Which notes a result carries (notes.h).
#include "simulator/notes.h"

#include <algorithm>

#include "model/architecture.h"
#include "simulator/lengths_sim.h"

namespace lorasim::sim {

std::vector<Note> notes_of(const Request& r, const model::StackModel& m, const Result& res, const NoteFacts& facts) {
  const model::Coefficients& c = m.c;
  std::vector<Note> notes;
  const auto add = [&notes](NoteKind kind, std::vector<double> values = {}) { notes.push_back({kind, std::move(values)}); };
  const auto measured = std::count_if(res.splits.begin(), res.splits.end(), [](const Split& s) { return s.measured; });
  if (measured) add(NoteKind::measured, {static_cast<double>(measured), res.memory_limit_bytes - c.context_bytes});
  if (r.gpus > 1) add(NoteKind::data_parallel);
  if (!r.hardware.calibrated) add(NoteKind::prior_profile, {m.prior.time > 0 ? 1.0 : 0.0});
  if (!r.hardware.bf16_supported && r.workload.train.precision == model::Precision::fp16) add(NoteKind::no_bf16);
  if (!r.hardware.origin(r.workload.stack.kind).calibrated) add(NoteKind::stack_prior, {c.expected_time_error});
  const double share = model::worst_case_share(c, r.workload);
  // The share where a split runs what this workload does not (checkpointing under recommend's
  // auto, shapes that vary): said beside the workload's own.
  const double with_options = std::max(m.prior.memory, c.worst_case_margin + c.worst_case_margin_options);
  add(NoteKind::stack_memory, {std::max(m.prior.memory, share), c.worst_case_bytes + m.prior.memory_bytes,
                                m.prior.memory_bytes, with_options});
  const double family = model::family_memory_error(r.workload.arch);
  if (family > std::max(m.prior.memory, share)) add(NoteKind::family_memory, {family});
  if (r.workload.train.precision != r.hardware.coefficients_precision) add(NoteKind::precision_scaled);
  const model::AllocatorMode allocator = r.workload.stack.allocator;
  if (facts.lengths && facts.varying && varying_shape_share(c, allocator, false) > 0)
    add(NoteKind::varying_shapes, {varying_shape_share(c, allocator, false), varying_shape_share(c, allocator, true)});
  if (facts.lengths && r.gpus > 1) add(NoteKind::slowest_gpu, {facts.all_exact ? 1.0 : 0.0});
  // Host dispatch speed is the least repeatable part of a step (bench/results/h200/README.md):
  // say so where the recommendation rests on it.
  if (res.recommended && res.splits[*res.recommended].host_bound && r.hardware.overlap == model::Overlap::max)
    add(NoteKind::recommended_host_bound);
  if (std::any_of(res.splits.begin(), res.splits.end(), [](const Split& s) { return s.host_bound; }))
    add(NoteKind::stack_host_bound, {c.host_spread});
  if (!res.recommended)
    add(facts.lengths ? NoteKind::no_worst_micro_batch_fits : NoteKind::no_split_fits, {res.usable_memory_bytes});
  return notes;
}

}  // namespace lorasim::sim
