// Output of data of many lengths: JSON fields, CSV columns and the table with the mean and p99
// step, the padding, the epoch and the worst micro-batch's memory.
#include "cli/lengths_output.h"

#include "cli/data_parallel_args.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/hf_arguments.h"
#include "cli/no_fit_advice.h"
#include "cli/recommend_lines.h"
#include "model/analytics.h"
#include "model/lengths.h"

namespace lorasim::cli {
namespace {

std::string percent(double fraction) { return fixed(fraction * 100, 0) + "%"; }

}  // namespace

void add_lengths_json(nlohmann::json& j, const sim::Request& req, const sim::LengthsResult& r, const LengthsArgs& a) {
  const sim::PaddingAdvice& advice = r.advice;
  const model::LengthDistribution d = req.workload.train.length_distribution();
  j["lengths"] = {{"file", a.file},
                  {"sequences", d.sequences()},
                  {"mean_tokens", d.mean_tokens()},
                  {"shortest_tokens", d.shortest_tokens()},
                  {"longest_tokens", d.longest_tokens()},
                  {"max_length_tokens", d.max_length_tokens()},
                  {"padding", model::padding_name(req.workload.train.padding)},
                  {"group_by_length", a.group_by_length},
                  {"rows_per_epoch", r.rows_per_epoch}};
  for (size_t i = 0; i < r.lengths.size(); ++i) {
    const sim::LengthFigures& f = r.lengths[i];
    nlohmann::json& s = j["splits"][i];
    s["step_time_p99_s"] = f.step_time_p99_s;
    s["padding_fraction"] = f.padding_fraction;
    s["mean_padded_length_tokens"] = f.mean_padded_length_tokens;
    s["worst_padded_length_tokens"] = f.worst_padded_length_tokens;
    s["activation_bytes"] = static_cast<int64_t>(f.activation_bytes);
    s["worst_width_reach"] = f.worst_width_reach;
    s["varying_need_share"] = f.varying_need_share;
    s["varying_shape_bytes"] = static_cast<int64_t>(f.varying_shape_bytes);
    s["varying_shape_worst_bytes"] = static_cast<int64_t>(f.varying_shape_worst_bytes);
    s["steps_per_epoch"] = f.steps_per_epoch;
    s["epoch_time_s"] = f.epoch_time_s;
    s["epoch_time_low_s"] = f.epoch_time_low_s;
    s["epoch_time_high_s"] = f.epoch_time_high_s;
    s["new_shapes_per_step"] = f.new_shapes_per_step;
    s["new_shape_time_s"] = f.new_shape_time_s;
    s["new_shapes_per_epoch"] = f.new_shapes_per_epoch;
    s["first_step_s"] = f.first_step_s;
    s["cold_start_s"] = f.cold_start_s;
  }
  if (r.result.recommended) {
    const sim::LengthFigures& f = r.lengths[*r.result.recommended];
    j["recommended"]["epoch_time_s"] = f.epoch_time_s;
    j["recommended"]["padding_fraction"] = f.padding_fraction;
    if (advice.next_best) {
      const sim::Split& n = r.result.splits[*advice.next_best];
      j["recommended"]["next_best"] = {{"micro_batch", n.micro_batch},
                                       {"accumulation", n.accumulation},
                                       {"grad_ckpt", n.grad_ckpt},
                                       {"epoch_time_s", r.lengths[*advice.next_best].epoch_time_s},
                                       {"padding_fraction", r.lengths[*advice.next_best].padding_fraction}};
    } else {
      j["recommended"]["next_best"] = nullptr;
    }
    j["recommended"]["faster_alternatives"] = nlohmann::json::array();
    for (const sim::PaddingAlternative& alt : advice.faster)
      j["recommended"]["faster_alternatives"].push_back({{"flag", alt.flag},
                                                         {"env", alt.env.empty() ? nlohmann::json() : nlohmann::json(alt.env)},
                                                         {"micro_batch", alt.micro_batch},
                                                         {"accumulation", alt.accumulation},
                                                         {"grad_ckpt", alt.grad_ckpt},
                                                         {"epoch_time_s", alt.epoch_time_s},
                                                         {"padding_fraction", alt.padding_fraction},
                                                         {"saving", alt.saving},
                                                         {"fits", alt.fits}});
  }
}

namespace {

/// The worst micro-batch's memory: what it needs, and the allocator's hold where that is more.
// Under the default allocator, varying shapes grow its cache only as far as the GPU has room:
// short of it, the allocator frees cached blocks and retries instead of failing.
std::string worst_memory_phrase(const sim::Split& s, double memory_limit_bytes) {
  if (s.needed_bytes >= s.worst_reserved_bytes) return human_bytes(s.worst_reserved_bytes) + " reserved";
  const std::string needs = "needs " + human_bytes(s.needed_bytes);
  if (s.worst_reserved_bytes > memory_limit_bytes)
    return needs + " (given room, the allocator's cache would grow to " + human_bytes(s.worst_reserved_bytes) +
           "; within the " + human_bytes(memory_limit_bytes) + " limit it frees cached blocks instead)";
  return needs + " (the allocator's cache may grow to " + human_bytes(s.worst_reserved_bytes) + ")";
}

}  // namespace

void print_lengths_csv(std::ostream& out, const sim::LengthsResult& r) {
  out << "micro_batch,accumulation,step_time_s,step_time_p99_s,padding_fraction,epoch_time_s,steps_per_epoch,"
         "mean_padded_length_tokens,worst_padded_length_tokens,micro_batch_time_s,host_time_s,device_time_s,"
         "optimizer_time_s,run_time_s,tokens_per_s,peak_allocated_bytes,peak_reserved_bytes,"
         "worst_reserved_bytes,fits,host_bound,rank,step_time_low_s,step_time_high_s,grad_ckpt,new_shapes_per_step,"
         "new_shape_time_s,needed_bytes,epoch_time_low_s,epoch_time_high_s\n";
  for (size_t i = 0; i < r.result.splits.size(); ++i) {
    const sim::Split& s = r.result.splits[i];
    const sim::LengthFigures& f = r.lengths[i];
    out << s.micro_batch << ',' << s.accumulation << ',' << s.step_time_s << ',' << f.step_time_p99_s << ','
        << f.padding_fraction << ',' << f.epoch_time_s << ',' << f.steps_per_epoch << ','
        << f.mean_padded_length_tokens << ',' << f.worst_padded_length_tokens << ',' << s.micro_batch_time_s << ','
        << s.host_time_s << ',' << s.device_time_s << ',' << s.optimizer_time_s << ',' << s.run_time_s << ','
        << s.tokens_per_s << ',' << static_cast<int64_t>(s.peak_allocated_bytes) << ','
        << static_cast<int64_t>(s.peak_reserved_bytes) << ',' << static_cast<int64_t>(s.worst_reserved_bytes) << ','
        << (s.fits ? "true" : "false") << ',' << (s.host_bound ? "true" : "false") << ',' << s.rank << ','
        << s.step_time_low_s << ',' << s.step_time_high_s << ',' << (s.grad_ckpt ? "true" : "false") << ','
        << f.new_shapes_per_step << ',' << f.new_shape_time_s << ',' << static_cast<int64_t>(s.needed_bytes) << ','
        << f.epoch_time_low_s << ',' << f.epoch_time_high_s << '\n';
  }
}

void print_lengths_table(std::ostream& out, const sim::Request& req, const hw::Profile& p, const sim::LengthsResult& r,
                         const LengthsArgs& a, const LengthsTableOptions& o, const std::vector<std::string>& notes) {
  const sim::PaddingAdvice& advice = r.advice;
  const bool both = o.recommend.both_grad_ckpt;
  const model::Workload& w = req.workload;
  const model::LengthDistribution d = w.train.length_distribution();
  const model::ParamCounts pc = model::count_params(w.arch, w.lora);
  const sim::Result& res = r.result;
  out << "model:     " << w.arch.name << " (" << human_count(static_cast<double>(pc.base)) << " frozen, "
      << human_count(static_cast<double>(pc.trainable)) << " trainable)\n"
      << "workload:  " << workload_line(w, both, false) << "\n"  // the lengths line says the lengths
      << "lengths:   " << a.file << ": " << d.sequences() << " sequences, " << d.shortest_tokens() << " to "
      << d.longest_tokens() << " tokens (mean " << fixed(d.mean_tokens(), 0) << ", max length "
      << d.max_length_tokens() << "), padding " << model::padding_name(w.train.padding)
      << (a.group_by_length ? ", grouped by length" : "") << "\n"
      << "stack:     " << w.stack.describe() << "\n"
      << "gpu:       " << profile_line(p) << "\n"
      << "batch:     effective " << req.effective_batch << " sequences per optimizer step, "
      << (r.lengths.empty() ? 0 : r.lengths.front().steps_per_epoch) << " steps per epoch of " << r.rows_per_epoch
      << (w.train.padding.mode == model::PaddingMode::packed ? " packed rows" : " sequences") << "\n";
  print_data_parallel_header(out, req, res);
  out << "memory:    " << human_bytes(res.memory_limit_bytes) << " limit, " << human_bytes(res.usable_memory_bytes)
      << " usable (" << fixed(req.safety_margin * 100, 0) << "% margin, "
      << human_bytes(p.hw.value("context_bytes")) << " CUDA context)\n\n";
  if (o.with_splits) {
    std::vector<std::string> header = {"micro", "accum", "step (mean)", "p99", "epoch", "padding", "padded len",
                                       "worst len", "peak reserved", "worst reserved", "needs", "fits", "rank", "bound by"};
    if (both) header.insert(header.begin() + 2, "ckpt");
    Table t(header);
    for (size_t i = 0; i < res.splits.size(); ++i) {
      const sim::Split& s = res.splits[i];
      const sim::LengthFigures& f = r.lengths[i];
      std::vector<std::string> row = {
          std::to_string(s.micro_batch), std::to_string(s.accumulation), human_seconds(s.step_time_s),
          human_seconds(f.step_time_p99_s), human_seconds(f.epoch_time_s), percent(f.padding_fraction),
          fixed(f.mean_padded_length_tokens, 0), std::to_string(f.worst_padded_length_tokens),
          human_bytes(s.peak_reserved_bytes), human_bytes(s.worst_reserved_bytes), human_bytes(s.needed_bytes),
          s.fits ? "yes" : "no",
          s.rank ? std::to_string(s.rank) : "-", s.host_bound ? "host" : "device"};
      if (both) row.insert(row.begin() + 2, s.grad_ckpt ? "on" : "off");
      t.add(row);
    }
    t.print(out);
    out << "\n";
  }
  if (!res.recommended) {
    out << "recommended: none (no split's worst micro-batch fits" << (both ? ", with or without gradient checkpointing" : "")
        << ": " << remedy_text(no_fit_remedies(req, both, true, o.recommend.four_bit_fits)) << ")\n";
  } else {
    const sim::Split& best = res.splits[*res.recommended];
    const sim::LengthFigures& f = r.lengths[*res.recommended];
    out << "recommended: micro-batch " << best.micro_batch << " x accumulation " << best.accumulation
        << (both ? best.grad_ckpt ? " with gradient checkpointing" : " without gradient checkpointing" : "") << ": "
        << human_seconds(best.step_time_s) << " per step on average (p99 " << human_seconds(f.step_time_p99_s)
        << "), " << human_seconds(f.epoch_time_s) << " per epoch, " << percent(f.padding_fraction)
        << " padding, worst micro-batch " << worst_memory_phrase(best, res.memory_limit_bytes) << "\n"
        << program_line(hf_arguments(best, w, true, a.group_by_length), best, w) << "\n";
    print_launch(out, hf_arguments(best, w, true, a.group_by_length));
    if (!bnb_config_python(w).empty()) out << "quantization_config: " << bnb_config_python(w) << "\n";
    out << "padding:     " << percent(f.padding_fraction) << " of the recommended split's tokens are padding";
    if (advice.next_best) {
      const sim::Split& n = res.splits[*advice.next_best];
      out << "; the next best, " << n.micro_batch << "x" << n.accumulation
          << (both ? n.grad_ckpt ? " with checkpointing" : " without checkpointing" : "") << " ("
          << human_seconds(r.lengths[*advice.next_best].epoch_time_s) << " per epoch), "
          << percent(r.lengths[*advice.next_best].padding_fraction);
    }
    out << "\n";
    print_near_miss(out, res, both);
  }
  for (const auto& n : notes) out << "note: " << n << "\n";
}

}  // namespace lorasim::cli
