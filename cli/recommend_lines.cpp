#include "cli/recommend_lines.h"

#include "cli/data_parallel_args.h"
#include "cli/format.h"
#include "cli/hf_arguments.h"
#include "cli/no_fit_advice.h"

namespace lorasim::cli {
namespace {

// A refused split whose need is within this share of the usable memory is named as a near miss:
// the worst case is set above every peak it was measured against (docs/cost-model.md, "Worst
// case"; docs/lengths.md, "At the memory limit"), so such a split may well run.
constexpr double kNearMiss = 0.10;

// Splits closer than this are one answer: step times of one split vary by a few percent from
// run to run (bench/results/h200/README.md), so "1.0x faster" would promise what noise undoes.
constexpr double kBarelyMatters = 1.05;

std::string split_phrase(const sim::Split& s, bool both) {
  return "micro-batch " + std::to_string(s.micro_batch) + " x accumulation " + std::to_string(s.accumulation) +
         (both ? s.grad_ckpt ? " with gradient checkpointing" : " without gradient checkpointing" : "");
}

std::string short_name(const sim::Split& s, bool both) {
  return std::to_string(s.micro_batch) + "x" + std::to_string(s.accumulation) + (both && s.grad_ckpt ? " ckpt" : "");
}

// What decides whether `s` fits: what it needs at the limit, where the simulator gave it.
double needs_bytes(const sim::Split& s) { return s.needed_bytes > 0 ? s.needed_bytes : s.worst_reserved_bytes; }

// What decided that `s` does not fit.
std::string why_refused(const sim::Split& s, double usable_bytes) {
  if (s.measured_oom) return "it ran out of memory when measured";
  const double needs = needs_bytes(s);
  return "it needs " + human_bytes(needs) + (s.measured ? " (measured)" : " in the worst case") + ", over the " +
         human_bytes(usable_bytes) + " usable";
}

nlohmann::json split_ref(const sim::Split& s) {
  return {{"micro_batch", s.micro_batch}, {"accumulation", s.accumulation}, {"grad_ckpt", s.grad_ckpt},
          {"step_time_s", s.step_time_s}};
}

}  // namespace

const sim::Split* runner_up(const sim::Result& r) {
  for (const sim::Split& s : r.splits)
    if (s.rank == 2) return &s;
  return nullptr;
}

const sim::Split* near_miss(const sim::Result& r) {
  if (!r.recommended) return nullptr;
  const sim::Split* out = nullptr;
  for (const sim::Split& s : r.splits) {
    const double needs = needs_bytes(s);
    if (!s.fits && !s.measured && s.step_time_s < r.splits[*r.recommended].step_time_s &&
        needs <= (1 + kNearMiss) * r.usable_memory_bytes && (!out || s.step_time_s < out->step_time_s))
      out = &s;
  }
  return out;
}

void print_near_miss(std::ostream& out, const sim::Result& r, bool both) {
  const sim::Split* s = near_miss(r);
  if (!s) return;
  const double needs = needs_bytes(*s);
  const sim::Split& best = r.splits[*r.recommended];
  out << "near miss:   " << split_phrase(*s, both) << " would be "
      << fixed(100 * (1 - s->step_time_s / best.step_time_s), 0) << "% faster and needs " << human_bytes(needs) << ", "
      << fixed(100 * (needs / r.usable_memory_bytes - 1), 0) << "% over the " << human_bytes(r.usable_memory_bytes)
      << " usable; lorasim's worst case lies above every peak it was measured against, so it may run: the tuner "
         "(lorasim_hf.tune, or LorasimTuner under Lightning) tries it on your GPU\n";
}

const sim::Split* fastest_refused(const sim::Result& r) {
  if (!r.recommended) return nullptr;
  const sim::Split* out = nullptr;
  for (const sim::Split& s : r.splits)
    if (!s.fits && s.step_time_s < r.splits[*r.recommended].step_time_s && (!out || s.step_time_s < out->step_time_s))
      out = &s;
  return out;
}

void print_recommendation(std::ostream& out, const sim::Request& req, const sim::Result& r,
                          const RecommendationContext& c) {
  const bool both = c.both_grad_ckpt;
  if (!r.recommended) {
    out << "recommended: none (no split fits" << (both ? ", with or without gradient checkpointing" : "") << ": "
        << remedy_text(no_fit_remedies(req, both, c.with_lengths, c.four_bit_fits)) << ")\n";
    return;
  }
  const sim::Split& best = r.splits[*r.recommended];
  const sim::Split* slowest = &best;  // of the same checkpointing: what the split alone gains
  for (const auto& s : r.splits)
    if (s.fits && s.grad_ckpt == best.grad_ckpt && s.step_time_s > slowest->step_time_s) slowest = &s;
  out << "recommended: " << split_phrase(best, both) << ": " << human_seconds(best.step_time_s) << " per step, "
      << human_seconds(best.run_time_s) << " for " << req.steps << " steps, peak "
      << human_bytes(best.peak_reserved_bytes) << " reserved";
  if (slowest->step_time_s >= kBarelyMatters * best.step_time_s)
    out << " (" << fixed(slowest->step_time_s / best.step_time_s, 1) << "x faster than " << short_name(*slowest, both)
        << ")";
  else if (slowest != &best)
    out << " (every split that fits is within " << fixed(100 * (kBarelyMatters - 1), 0)
        << "% of it: the split barely matters here)";
  const HfArguments hf = hf_arguments(best, req.workload);
  out << "\n" << program_line(hf, best, req.workload) << "\n";
  const std::string bnb = bnb_config_python(req.workload);
  if (!bnb.empty())
    out << "quantization_config: " << bnb
        << (req.workload.train.kbit_prepare ? " (then peft.prepare_model_for_kbit_training(model))"
                                            : " (the model as loaded: prepare_model_for_kbit_training not assumed; "
                                              "--kbit-prepare true if you call it)")
        << "\n";
  print_launch(out, hf);
  if (const sim::Split* second = runner_up(r))
    out << "runner-up:   " << split_phrase(*second, both) << ": " << human_seconds(second->step_time_s)
        << " per step, " << fixed(100 * (second->step_time_s / best.step_time_s - 1), 0) << "% slower\n";
  if (const sim::Split* refused = fastest_refused(r))
    out << "refused:     " << split_phrase(*refused, both) << ": " << human_seconds(refused->step_time_s)
        << " per step, but " << why_refused(*refused, r.usable_memory_bytes) << "\n";
  print_near_miss(out, r, both);
  if (c.trainer == "sft" && both && !best.grad_ckpt)
    out << "note: SFTConfig turns gradient checkpointing on unless told: this split is faster without it, so pass "
           "gradient_checkpointing=False (the flags above do)\n";
}

void add_recommendation_json(nlohmann::json& j, const sim::Request& req, const sim::Result& r,
                             const RecommendationContext& c) {
  if (!r.recommended) {
    j["no_fit_advice"] = remedy_keys(no_fit_remedies(req, c.both_grad_ckpt, c.with_lengths, c.four_bit_fits));
    return;
  }
  if (const sim::Split* second = runner_up(r)) j["recommended"]["runner_up"] = split_ref(*second);
  if (const sim::Split* refused = fastest_refused(r)) {
    j["recommended"]["refused"] = split_ref(*refused);
    j["recommended"]["refused"]["why"] = why_refused(*refused, r.usable_memory_bytes);
  }
  if (const sim::Split* near = near_miss(r)) {
    j["recommended"]["near_miss"] = split_ref(*near);
    j["recommended"]["near_miss"]["needed_bytes"] = needs_bytes(*near);
  }
}

}  // namespace lorasim::cli
