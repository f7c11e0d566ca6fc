// `lorasim simulate` and `lorasim recommend`: predictions for every split of an effective
// batch on one GPU profile, as a table, CSV or JSON.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/data_parallel_args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/hf_arguments.h"
#include "cli/quant_args.h"
#include "cli/quant_hint.h"
#include "cli/lengths_args.h"
#include "cli/lengths_output.h"
#include "cli/measured_rows.h"
#include "cli/memory_limit.h"
#include "cli/output_path.h"
#include "cli/preset_notes.h"
#include "cli/recommend_lines.h"
#include "cli/split_charts.h"
#include "cli/trainer_preset.h"
#include "model/training_stack.h"
#include "model/analytics.h"
#include "simulator/note_text.h"
#include "simulator/simulate.h"

namespace lorasim::cli {
namespace {

struct SimulateArgs {
  WorkloadArgs workload;
  HardwareArgs hardware;
  int64_t effective_batch = 16;  ///< sequences per optimizer step
  int64_t steps = 100;           ///< optimizer steps for the run-time column
  MemoryLimitArgs memory;
  double safety_margin = sim::Request{}.safety_margin;
  std::string format = "table";
  std::string plot;  ///< --plot: SVG chart path, empty for none
  LengthsArgs lengths;
  std::vector<std::string> measured;  ///< --measured: measurement files whose splits replace the prediction
  bool allow_device_mismatch = false; ///< --measured rows of another device than --gpu/--profile's
  DataParallelArgs data_parallel;     ///< --gpus, --link
};

/// `with_plot`: `simulate` draws a chart; `recommend` prints one line and has no --plot.
void simulate_options(OptionTable& t, SimulateArgs& a, bool with_plot) {
  t.integer("effective-batch", a.effective_batch, 1, "sequences per optimizer step, B = micro-batch x accumulation")
      .integer("steps", a.steps, 1, "optimizer steps for the run-time column");
  add_hardware_options(t, a.hardware);
  add_workload_options(t, a.workload);
  add_trainer_option(t, a.workload);
  add_lengths_options(t, a.lengths);
  add_memory_limit_options(t, a.memory, "usable device memory, e.g. 40GiB (default: the GPU's)");
  add_data_parallel_options(t, a.data_parallel);
  t.real("safety-margin", a.safety_margin, 0, 0.9, "fraction of the limit kept free for other processes on the GPU (the worst case holds the measured spread)")
      .choice("format", a.format, {"table", "csv", "json"}, "table, csv or json")
      .paths("measured", a.measured,
             "measurement file (docs/measurements.md; may be repeated): the splits it ran of this workload take "
             "their measured step time and peak instead of the predicted ones")
      .toggle("allow-device-mismatch", a.allow_device_mismatch,
              "take --measured rows of another device than --gpu/--profile's (default: refused)");
  if (with_plot) t.path("plot", a.plot, "also draw step time and peak memory per split to this .svg");
}

nlohmann::json split_json(const sim::Split& s) {
  return {{"micro_batch", s.micro_batch},
          {"accumulation", s.accumulation},
          {"grad_ckpt", s.grad_ckpt},
          {"step_time_s", s.step_time_s},
          {"step_time_low_s", s.step_time_low_s},
          {"step_time_high_s", s.step_time_high_s},
          {"micro_batch_time_s", s.micro_batch_time_s},
          {"host_time_s", s.host_time_s},
          {"device_time_s", s.device_time_s},
          {"optimizer_time_s", s.optimizer_time_s},
          {"run_time_s", s.run_time_s},
          {"tokens_per_s", s.tokens_per_s},
          {"peak_allocated_bytes", static_cast<int64_t>(s.peak_allocated_bytes)},
          {"peak_reserved_bytes", static_cast<int64_t>(s.peak_reserved_bytes)},
          {"worst_reserved_bytes", static_cast<int64_t>(s.worst_reserved_bytes)},
          {"needed_bytes", static_cast<int64_t>(s.needed_bytes)},
          {"fits", s.fits},
          {"measured", s.measured},
          {"measured_oom", s.measured_oom},
          {"host_bound", s.host_bound},
          {"rank", s.rank}};
}

/// `c.both_grad_ckpt`: each split says its own checkpointing. `notes`: the result's notes as
/// written out, and the command's own.
nlohmann::json result_json(const sim::Request& req, const hw::Profile& p, const sim::Result& r,
                           const std::vector<std::string>& notes, const RecommendationContext& c,
                           bool group_by_length = false) {
  const bool both = c.both_grad_ckpt, with_lengths = c.with_lengths;
  const std::string& trainer = c.trainer;
  nlohmann::json j;
  j["gpu"] = profile_json(p);
  j["workload"] = workload_json(req.workload);
  if (both) j["workload"]["grad_ckpt"] = "auto";
  if (!trainer.empty()) j["workload"]["trainer"] = trainer;
  j["effective_batch"] = req.effective_batch;
  j["steps"] = req.steps;
  j["memory_limit_bytes"] = static_cast<int64_t>(r.memory_limit_bytes);
  j["usable_memory_bytes"] = static_cast<int64_t>(r.usable_memory_bytes);
  j["safety_margin"] = req.safety_margin;
  j["splits"] = nlohmann::json::array();
  for (const auto& s : r.splits) {
    j["splits"].push_back(split_json(s));
    add_split_data_parallel_json(s, j["splits"].back());
  }
  add_result_data_parallel_json(req, r, j);
  if (r.recommended) {
    const sim::Split& s = r.splits[*r.recommended];
    const HfArguments hf = hf_arguments(s, req.workload, with_lengths, group_by_length);
    j["recommended"] = {{"micro_batch", s.micro_batch},
                        {"accumulation", s.accumulation},
                        {"grad_ckpt", s.grad_ckpt},
                        {"step_time_s", s.step_time_s},
                        {"hf_args", hf_flags(hf)},
                        {"training_arguments", hf_json(hf)}};
    if (req.workload.train.quantized()) j["recommended"]["quantization_config"] = bnb_config_json(req.workload);
    const std::string own =
        model::training_stack(req.workload.stack.kind).split_settings(req.workload, s.micro_batch, s.accumulation, s.grad_ckpt);
    if (!own.empty()) j["recommended"]["program_settings"] = own;
    if (const LaunchCommands l = launch_commands(hf); !l.torchrun.empty())
      j["recommended"]["launch"] = {{"torchrun", l.torchrun}, {"accelerate", l.accelerate}};
    if (hf.fsdp) j["recommended"]["launch"]["accelerate_fsdp_config"] = accelerate_fsdp_config(hf);
  } else {
    j["recommended"] = nullptr;
  }
  add_recommendation_json(j, req, r, c);
  j["notes"] = notes;
  return j;
}

void print_csv(const sim::Result& r) {
  std::cout << "micro_batch,accumulation,step_time_s,micro_batch_time_s,host_time_s,device_time_s,"
               "optimizer_time_s,run_time_s,tokens_per_s,peak_allocated_bytes,peak_reserved_bytes,"
               "fits,host_bound,rank,worst_reserved_bytes,step_time_low_s,step_time_high_s,grad_ckpt,measured\n";
  for (const auto& s : r.splits) {
    std::cout << s.micro_batch << ',' << s.accumulation << ',' << s.step_time_s << ','
              << s.micro_batch_time_s << ',' << s.host_time_s << ',' << s.device_time_s << ','
              << s.optimizer_time_s << ',' << s.run_time_s << ',' << s.tokens_per_s << ','
              << static_cast<int64_t>(s.peak_allocated_bytes) << ','
              << static_cast<int64_t>(s.peak_reserved_bytes) << ',' << (s.fits ? "true" : "false") << ','
              << (s.host_bound ? "true" : "false") << ',' << s.rank << ','
              << static_cast<int64_t>(s.worst_reserved_bytes) << ',' << s.step_time_low_s << ','
              << s.step_time_high_s << ',' << (s.grad_ckpt ? "true" : "false") << ','
              << (s.measured_oom ? "oom" : s.measured ? "true" : "false") << '\n';
  }
}

void print_header(const sim::Request& req, const hw::Profile& p, const sim::Result& r, bool both) {
  const model::ParamCounts pc = model::count_params(req.workload.arch, req.workload.lora);
  std::cout << "model:     " << req.workload.arch.name << " (" << human_count(static_cast<double>(pc.base))
            << " frozen, " << human_count(static_cast<double>(pc.trainable)) << " trainable)\n"
            << "workload:  " << workload_line(req.workload, both) << "\n"
            << "stack:     " << req.workload.stack.describe() << "\n"
            << "gpu:       " << profile_line(p) << "\n"
            << "batch:     effective " << req.effective_batch << " sequences = "
            << req.effective_batch * req.workload.train.seq_len << " tokens per optimizer step\n"
            << "memory:    " << human_bytes(r.memory_limit_bytes) << " limit, "
            << human_bytes(r.usable_memory_bytes) << " usable (" << fixed(req.safety_margin * 100, 0)
            << "% margin, " << human_bytes(p.hw.value("context_bytes")) << " CUDA context)\n";
  print_data_parallel_header(std::cout, req, r);
}

/// The step time's range as a symmetric share of it, "±18%"; a measured split has no range.
std::string range_cell(const sim::Split& s) {
  if (s.measured) return "measured";
  return "±" + fixed(100 * (s.step_time_high_s - s.step_time_low_s) / (2 * s.step_time_s), 0) + "%";
}

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& n : notes) std::cout << "note: " << n << "\n";
}

void print_table(const sim::Request& req, const hw::Profile& p, const sim::Result& r,
                 const std::vector<std::string>& notes, const RecommendationContext& c) {
  const bool both = c.both_grad_ckpt;
  print_header(req, p, r, both);
  std::cout << "\n";
  std::vector<std::string> header = {"micro", "accum", "step", "range", std::to_string(req.steps) + " steps",
                                     "tokens/s", "peak alloc", "peak reserved", "worst reserved", "fits", "rank", "bound by"};
  if (both) header.insert(header.begin() + 2, "ckpt");
  Table t(header);
  for (const auto& s : r.splits) {
    std::vector<std::string> row = {std::to_string(s.micro_batch), std::to_string(s.accumulation),
                                    human_seconds(s.step_time_s), range_cell(s), human_seconds(s.run_time_s),
                                    fixed(s.tokens_per_s, 0), human_bytes(s.peak_allocated_bytes),
                                    human_bytes(s.peak_reserved_bytes), human_bytes(s.worst_reserved_bytes),
                                    s.fits ? "yes" : s.measured_oom ? "no (OOM)" : "no",
                                    s.rank ? std::to_string(s.rank) : "-", s.host_bound ? "host" : "device"};
    if (both) row.insert(row.begin() + 2, s.grad_ckpt ? "on" : "off");
    t.add(row);
  }
  t.print(std::cout);
  std::cout << "\n";
  print_recommendation(std::cout, req, r, c);
  print_notes(notes);
}

struct Prepared {
  sim::Request request;
  hw::Profile profile;
  Format format;
  std::string plot_path;
  bool with_lengths = false;
  LengthsArgs lengths;
  bool both_grad_ckpt = false;  ///< --grad-ckpt auto: every split with checkpointing off and on
  std::string trainer;          ///< --trainer's preset, empty where not given
  bool grad_ckpt_from_trainer = false;  ///< checkpointing on because the --trainer preset sets it
  bool gpu_defaulted = false;   ///< neither --gpu nor --profile: the default GPU's answer
  bool kbit_from_trainer = false;  ///< a quantized base not prepared because the --trainer preset says so

  RecommendationContext context(bool four_bit_fits = false) const {
    return {both_grad_ckpt, trainer, four_bit_fits, with_lengths};
  }
};

/// `grad_ckpt_default`: what --grad-ckpt is when not given (simulate: false, recommend: auto).
bool prepare(const Args& args, const char* usage, bool with_plot, const char* grad_ckpt_default, Prepared& out) {
  SimulateArgs a;
  a.workload.grad_ckpt_default = grad_ckpt_default;
  OptionTable t;
  simulate_options(t, a, with_plot);
  if (!t.parse(args)) {
    std::cout << usage << "\n" << t.description() << "\n";
    return false;
  }
  out.format = parse_format(a.format);
  if (t.given("plot")) check_outputs({{"--plot", a.plot, ".svg"}});
  out.plot_path = a.plot;
  out.profile = select_profile(a.hardware);
  out.request.hardware = out.profile.hw;
  out.both_grad_ckpt = grad_ckpt_mode(a.workload) == GradCkpt::both;
  out.trainer = a.workload.trainer.value_or("");
  // Not a prepared quantized base: prepare_model_for_kbit_training, not the preset, turns it on there.
  out.grad_ckpt_from_trainer = !a.workload.grad_ckpt && a.workload.trainer && a.workload.grad_ckpt_default != "auto" &&
                               trainer_preset(*a.workload.trainer).grad_ckpt &&
                               !kbit_prepared(with_trainer_preset(a.workload));
  out.gpu_defaulted = !a.hardware.gpu_given && a.hardware.profile.empty();
  // The workload of both settings is built with checkpointing off; the simulation sets it per split.
  out.request.workload = build_workload(out.both_grad_ckpt ? with_grad_ckpt(a.workload, false) : a.workload,
                                        out.profile.hw.bf16_supported);
  out.kbit_from_trainer = a.workload.trainer && !a.workload.kbit_prepare && out.request.workload.train.quantized() &&
                          !out.request.workload.train.kbit_prepare;
  out.with_lengths = lengths_given(t);
  if (out.with_lengths && !t.given("max-length")) a.lengths.max_length_tokens = trainer_max_length_tokens(a.workload);
  out.lengths = a.lengths;
  if (out.with_lengths) apply_lengths(a.lengths, out.request.workload);
  if (!a.measured.empty() && out.with_lengths)
    throw InputError("--measured replaces predictions of fixed-length data only: drop --measured or the lengths options");
  out.request.effective_batch = a.effective_batch;
  out.request.steps = a.steps;
  out.request.memory_limit_bytes =
      checked_memory_limit(a.memory, out.profile.hw.memory_bytes, out.profile.hw.display_name);
  out.request.safety_margin = a.safety_margin;
  apply_data_parallel(a.data_parallel, out.request);
  if (a.allow_device_mismatch && a.measured.empty())
    throw InputError("--allow-device-mismatch takes --measured rows of another device: drop it or give --measured");
  out.request.measured =
      measured_splits(a.measured, out.request, out.profile, out.both_grad_ckpt, a.allow_device_mismatch, std::cerr);
  return true;
}

/// What the command line left to defaults and presets (cli/preset_notes.h), added to `notes`
/// (the CLI's own sentences, not the simulator's); `fixed_lengths`: the notes that simulate the
/// other choice, which the data of many lengths leave out.
void add_preset_notes(const Prepared& p, const sim::Result& r, std::vector<std::string>& notes, bool fixed_lengths) {
  auto add = [&notes](std::string note) {
    if (!note.empty()) notes.push_back(std::move(note));
  };
  if (fixed_lengths && p.grad_ckpt_from_trainer) add(trainer_ckpt_note(p.request, r));
  if (p.kbit_from_trainer) add(kbit_recipe_note(p.request, fixed_lengths));
  if (p.gpu_defaulted) notes.insert(notes.begin(), default_gpu_note(p.profile));
}

struct Answer {
  sim::Result result;
  std::vector<std::string> notes;  ///< the result's notes as written out, then the command's own
  RecommendationContext context;
};

/// `recommending`: when nothing fits, say whether a 4-bit base would (cli/quant_hint.h).
Answer run_fixed(const Prepared& p, bool recommending = false) {
  Answer a{p.both_grad_ckpt ? sim::simulate_both_grad_ckpt(p.request) : sim::simulate(p.request), {}, p.context()};
  a.notes = sim::note_texts(p.request, a.result);
  const std::string quant = recommending ? quant_fit_note(p.request, a.result) : "";
  if (!quant.empty()) a.notes.push_back(quant);
  a.context.four_bit_fits = !quant.empty();
  add_preset_notes(p, a.result, a.notes, true);
  return a;
}

/// simulate and recommend for data of many lengths (cli/lengths_output.h).
int print_lengths(const Prepared& p, bool with_splits) {
  sim::Plan plan;
  plan.both_grad_ckpt = p.both_grad_ckpt;
  plan.lengths = lengths_options(p.lengths);
  plan.advice = true;
  const sim::LengthsResult r = sim::run(p.request, plan);
  std::vector<std::string> notes = sim::note_texts(p.request, r.result);
  RecommendationContext context = p.context();
  if (!with_splits) {  // recommend: nothing fits, would a 4-bit base? (cli/quant_hint.h)
    const std::string quant = quant_fit_note(p.request, *plan.lengths, r);
    if (!quant.empty()) notes.push_back(quant);
    context.four_bit_fits = !quant.empty();
  }
  add_preset_notes(p, r.result, notes, false);
  const std::vector<std::string> advice = sim::advice_texts(r);
  notes.insert(notes.end(), advice.begin(), advice.end());
  if (!p.plot_path.empty()) write_svg({lengths_chart(p.request, p.profile, r)}, p.plot_path);
  switch (p.format) {
    case Format::json: {
      nlohmann::json j = result_json(p.request, p.profile, r.result, notes, context, p.lengths.group_by_length);
      add_lengths_json(j, p.request, r, p.lengths);
      std::cout << j.dump(2) << "\n";
      break;
    }
    case Format::csv: print_lengths_csv(std::cout, r); break;
    case Format::table:
      print_lengths_table(std::cout, p.request, p.profile, r, p.lengths, {with_splits, context}, notes);
      break;
  }
  return kOk;
}

}  // namespace

int cmd_simulate(const Args& args) {
  Prepared p;
  if (!prepare(args,
               "usage: lorasim simulate [options]\n\n"
               "Predicts step time and peak memory for every split micro-batch x accumulation of\n"
               "the effective batch, marks which fit in memory, and recommends the fastest.\n\n"
               "examples:\n"
               "  lorasim simulate --gpu h200 --model qwen3-8b --effective-batch 64 --seq-len 2048 --grad-ckpt\n"
               "  lorasim simulate --gpu a100-80gb --model-config config.json --effective-batch 32 \\\n"
               "                   --seq-len 1024 --lora-rank 64 --lora-targets q,k,v,o --format json\n"
               "  lorasim simulate --profile my-h200.toml --model qwen3-4b --effective-batch 32\n"
               "  lorasim simulate --gpu h200 --model qwen3-1.7b --effective-batch 16 --plot splits.svg\n"
               "  lorasim simulate --gpu l4 --model qwen3-1.7b --effective-batch 16 --grad-ckpt auto --trainer sft\n"
               "  lorasim simulate --gpu h200 --model qwen3-1.7b --effective-batch 16 --grad-ckpt \\\n"
               "                   --lengths lengths.csv --padding longest --max-length 1024\n"
               "  lorasim simulate --gpu h200 --model qwen3-1.7b --effective-batch 32 --gpus 2 --lengths lengths.csv\n"
               "  lorasim simulate --gpu l4 --model qwen3-8b --effective-batch 8 --seq-len 256 --gpus 4 --fsdp",
               true, "false", p))
    return kOk;
  if (p.with_lengths) return print_lengths(p, true);
  const Answer a = run_fixed(p);
  const sim::Result& r = a.result;
  if (!p.plot_path.empty()) write_svg({simulation_chart(p.request, p.profile, r)}, p.plot_path);
  switch (p.format) {
    case Format::json: std::cout << result_json(p.request, p.profile, r, a.notes, a.context).dump(2) << "\n"; break;
    case Format::csv: print_csv(r); break;
    case Format::table: print_table(p.request, p.profile, r, a.notes, a.context); break;
  }
  return kOk;
}

int cmd_recommend(const Args& args) {
  Prepared p;
  if (!prepare(args,
               "usage: lorasim recommend [options]\n\n"
               "Prints the fastest split of the effective batch that fits in memory, as\n"
               "HF TrainingArguments flags. Unless --grad-ckpt says otherwise it weighs every split\n"
               "with gradient checkpointing on and off. `lorasim simulate` shows every split.\n\n"
               "examples:\n"
               "  lorasim recommend --gpu t4 --model qwen3-1.7b --effective-batch 4 --seq-len 512\n"
               "  lorasim recommend --gpu l4 --model llama-3.2-3b --effective-batch 32 --grad-ckpt true --format json\n"
               "  lorasim recommend --gpu t4 --model qwen3-1.7b --effective-batch 16 --seq-len 1024 --trainer sft\n"
               "  lorasim recommend --gpu l4 --model qwen3-1.7b --effective-batch 32 --lengths lengths.csv "
               "--max-length 2048\n"
               "  lorasim recommend --gpu h200 --model qwen3-1.7b --effective-batch 16 --memory-limit 15GiB "
               "--measured runs.jsonl\n"
               "  lorasim recommend --gpu h200 --model qwen3-1.7b --effective-batch 16 --gpus 2 --lengths lengths.csv\n"
               "  lorasim recommend --gpu l4 --model qwen3-8b --effective-batch 8 --seq-len 256 --gpus 4 --fsdp",
               false, "auto", p))
    return kOk;
  if (p.with_lengths) return print_lengths(p, false);
  const Answer a = run_fixed(p, true);
  const sim::Result& r = a.result;
  switch (p.format) {
    case Format::json: std::cout << result_json(p.request, p.profile, r, a.notes, a.context).dump(2) << "\n"; break;
    case Format::csv: print_csv(r); break;
    case Format::table:
      print_header(p.request, p.profile, r, p.both_grad_ckpt);
      std::cout << "\n";
      print_recommendation(std::cout, p.request, r, a.context);
      print_notes(a.notes);
      break;
  }
  return kOk;
}

}  // namespace lorasim::cli
