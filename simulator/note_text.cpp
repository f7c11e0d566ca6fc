// The notes' sentences (note_text.h).
#include "simulator/note_text.h"

#include <cstdio>

#include "model/lengths.h"
#include "model/training_stack.h"
#include "simulator/fsdp.h"
#include "simulator/measured_splits.h"
#include "simulator/note_format.h"

namespace lorasim::sim {
namespace {

// "1.5%": a share that needs its decimal.
std::string share(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", fraction * 100);
  return buf;
}

std::string seconds(double s) {
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

std::string data_parallel_text(const Result& res, const model::HardwareModel& hw) {
  const DataParallelCost& dp = res.data_parallel;
  const model::Interconnect& ic = res.interconnect;
  char bw[64];
  std::snprintf(bw, sizeof bw, "%g GB/s", ic.allreduce_gbps);
  const bool own = hw.interconnect && *hw.interconnect == ic;
  const std::string over = std::string(" over ") + model::link_name(ic.link) + " at " + bw +
                           (!own ? " (the link's datasheet prior)"
                                 : ic.calibrated ? " (the profile's [interconnect], measured: " + hw.interconnect->source + ")"
                                                 : " (the profile's [interconnect])");
  if (res.fsdp)
    return std::to_string(dp.gpus) + " GPUs, FSDP FULL_SHARD: each GPU holds " +
           mib(res.fsdp_memory.sharded_weights_bytes) + " of sharded frozen weights, the " +
           mib(res.fsdp_memory.root_unit_bytes) + " root unit (embeddings, head) and " +
           std::to_string(kFsdpLayersInFlight) + " gathered layers (" + mib(res.fsdp_memory.layers_in_flight_bytes) +
           "); every layer is all-gathered in the forward and again in the backward" + over +
           ", overlapped with compute but for one layer per pass; a prior not validated on a GPU, off by "
           "~30% or more (docs/data-parallel.md)";
  return std::to_string(dp.gpus) + " GPUs data parallel (DDP): the adapters' " + mib(dp.bucket_memory_bytes) +
         " of fp32 gradients are all-reduced once per step in " + std::to_string(dp.buckets) +
         (dp.buckets == 1 ? " bucket" : " buckets") + over +
         ", overlapped with the last backward; memory is per GPU and holds DDP's copy of the gradients "
         "(docs/data-parallel.md)";
}

std::string stack_memory_text(const Note& n, const Request& r) {
  const double share = n.values[0], bytes = n.values[1], prior_bytes = n.values[2], with_options = n.values[3];
  const std::string options =
      with_options > share ? ", " + percent(with_options) +
                                 " with checkpointing, LoRA dropout, no autocast, a quantized base or shapes that vary"
                           : "";
  return model::training_stack(r.workload.stack.kind)
      .memory_note(r.workload.stack, r.hardware.overlap == model::Overlap::max,
                   percent(share) +
                       " of the variable memory (what the count was seen to miss" + options +
                       "; weights and optimizer state are exact) plus " + mib(bytes) +
                       (prior_bytes > 0 ? " (with the " + r.hardware.name + " prior's device term, which no datasheet gives)"
                                        : ""));
}

std::string split_name(int64_t micro_batch, int64_t accumulation, bool grad_ckpt) {
  return std::to_string(micro_batch) + "x" + std::to_string(accumulation) + (grad_ckpt ? " (checkpointed)" : "");
}

}  // namespace

std::string note_text(const Note& n, const Request& r, const Result& res) {
  const model::HardwareModel& hw = r.hardware;
  const model::TrainingStack& stack = model::training_stack(r.workload.stack.kind);
  const std::vector<double>& v = n.values;
  switch (n.kind) {
    case NoteKind::measured:
      return std::to_string(static_cast<int64_t>(v[0])) + (v[0] == 1 ? " split was" : " splits were") +
             " measured: step time and peak are the runs'; such a split fits when its peak plus " +
             share(kMeasuredPeakRepeatability) + " (the repeatability of a measured peak) stays within " + mib(v[1]) +
             " (the limit less the CUDA context: a measured peak holds what the safety margin is for)";
    case NoteKind::data_parallel: return data_parallel_text(res, hw);
    case NoteKind::prior_profile:
      return "profile '" + hw.name + "' is a datasheet prior, not a calibration: step times may be off by ~" +
             percent(hw.value("expected_time_error")) + " and memory by ~" + percent(hw.value("expected_memory_error")) +
             " of the variable memory plus " + mib(hw.value("expected_memory_error_bytes")) +
             (v[0] > 0 ? ", and the range and the worst case say so" : "") +
             " (run `lorasim calibrate` on this GPU for a calibrated profile)";
    case NoteKind::no_bf16: return "the " + hw.display_name + " has no bf16: fp16 mixed precision assumed";
    case NoteKind::stack_prior: return stack.prior_note(hw.name, percent(v[0]));
    case NoteKind::stack_memory: return stack_memory_text(n, r);
    case NoteKind::family_memory:
      return "model_type " + r.workload.arch.model_type + ": no calibration has measured how far the " +
             "allocator holds this family's memory above its peak allocated, so the worst case adds " + percent(v[0]) +
             " of the variable memory (bench/results/h200/archs-run1 measured up to 10% above the calibrated "
             "families' line)";
    case NoteKind::precision_scaled:
      return std::string("profile rates were fitted in ") + model::precision_name(hw.coefficients_precision) + "; " +
             model::precision_name(r.workload.train.precision) + " times are scaled by the datasheet peak ratio";
    case NoteKind::varying_shapes:
      return std::string("micro-batches of varying shapes: reserved memory adds the ") +
             model::allocator_name(r.workload.stack.allocator) + " allocator's hold for them (" +
             std::to_string(static_cast<int>(std::lround(v[0] * 100))) + "% of the activations expected, " +
             std::to_string(static_cast<int>(std::lround(v[1] * 100))) + "% in the worst case; docs/lengths.md)";
    case NoteKind::slowest_gpu:
      return "each of the " + std::to_string(r.gpus) +
             " GPUs draws and pads its own micro-batches and the step waits for the slowest: the step is the "
             "expected maximum over the GPUs of one GPU's step (" +
             (v[0] > 0 ? std::string("exact")
                       : std::string("from the sampled steps where a step holds more than one micro-batch")) +
             "), and each GPU's new shapes stall them all (docs/lengths.md)";
    case NoteKind::recommended_host_bound:
      return "the recommended split is host-bound (the CPU's operator dispatch sets its pace): such times follow the "
             "CPU's speed, which drifts between runs far more than device-bound times do (docs/cost-model.md lists "
             "the limits)";
    case NoteKind::stack_host_bound: return stack.host_bound_note(percent(v[0]));
    // The facts only: what would help is the CLI's to say (cli/no_fit_advice.h decides it once,
    // knowing whether checkpointing was weighed and whether a 4-bit base fits).
    case NoteKind::no_split_fits: return "no split fits in " + mib(v[0]) + " usable, not even micro-batch 1";
    case NoteKind::no_worst_micro_batch_fits:
      return std::string("no split's worst micro-batch (its longest sequences together) fits in the usable memory") +
             (r.gpus > 1 ? " of a GPU" : "") + ", not even at micro-batch 1";
    case NoteKind::fsdp_would_fit:
      return "no split fits with the frozen weights replicated on each of the " + std::to_string(r.gpus) +
             " GPUs; with --fsdp (FULL_SHARD: the weights sharded across them) micro-batch " +
             std::to_string(static_cast<int64_t>(v[0])) + " x accumulation " + std::to_string(static_cast<int64_t>(v[1])) +
             " fits (worst case " + mib(v[2]) + " per GPU)";
  }
  return "";
}

std::vector<std::string> note_texts(const Request& r, const Result& res) {
  std::vector<std::string> out;
  for (const Note& n : res.notes)
    if (std::string text = note_text(n, r, res); !text.empty()) out.push_back(std::move(text));
  return out;
}

std::vector<std::string> advice_texts(const LengthsResult& res) {
  std::vector<std::string> out;
  if (!res.result.recommended) return out;
  const Split& best = res.result.splits[*res.result.recommended];
  const LengthFigures& f = res.lengths[*res.result.recommended];
  for (const PaddingAlternative& alt : res.advice.faster) {
    if (alt.flag == "--allocator expandable") {
      const std::string refused = alt.refused_needed_bytes > 0 ? " (its worst micro-batch needs " +
                                                                     gib(alt.refused_needed_bytes) + " of the " +
                                                                     gib(res.result.usable_memory_bytes) + " usable)"
                                                               : "";
      out.push_back("the default allocator's fragmentation refuses " +
                    split_name(alt.micro_batch, alt.accumulation, alt.grad_ckpt) + refused + "; with " + alt.env +
                    " (--allocator expandable) it fits and an epoch is " + percent(alt.saving) + " faster (" +
                    seconds(alt.epoch_time_s) + " instead of " + seconds(f.epoch_time_s) + " at " +
                    split_name(best.micro_batch, best.accumulation, best.grad_ckpt) + ")");
      continue;
    }
    std::string note = alt.flag + " would make an epoch at " + std::to_string(best.micro_batch) + "x" +
                       std::to_string(best.accumulation) + " " + percent(alt.saving) + " faster (" +
                       seconds(alt.epoch_time_s) + " instead of " + seconds(f.epoch_time_s) + ", " +
                       percent(alt.padding_fraction) + " padding instead of " + percent(f.padding_fraction) + ")";
    note += alt.flag == "--padding packed"
                ? "; TRL's packing=True: each row then holds several sequences, so a step sees more of them"
                : "; HF's group_by_length=True";
    if (!alt.fits) note += "; but its worst micro-batch does not fit";
    out.push_back(note);
  }
  return out;
}

}  // namespace lorasim::sim
