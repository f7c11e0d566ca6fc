// `lorasim validate`: measures real splits on this machine's device and compares them with
// the prediction from a profile, so users can trust (or correct) it.
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "calibrate/compare.h"
#include "calibrate/measurement.h"
#include "calibrate/measurement_io.h"
#include "calibrate/measurement_label.h"
#ifdef LORASIM_WITH_CALIBRATE
#include "calibrate/convert.h"
#include "calibrate/precision.h"
#include "calibrate/runner.h"
#include "cli/device_profile.h"
#include "hwprofiles/match.h"
#endif
#include "cli/args.h"
#include "cli/data_parallel_args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/forward.h"
#include "cli/hardware_args.h"
#include "cli/lengths_args.h"
#include "cli/memory_limit.h"
#include "cli/output_path.h"
#include "cli/row_device.h"
#include "cli/split_charts.h"
#include "cli/validate_measurements.h"
#include "model/error.h"
#include "simulator/simulate.h"

namespace lorasim::cli {
namespace {

/// validate's options; the live-run numbers are typed, the rest is text checked where used.
struct ValidateArgs {
  WorkloadArgs workload;
  HardwareArgs hardware;
  std::string device = "auto";
  int64_t effective_batch = 16;
  std::string splits;            ///< "1x16,4x4"; empty: every split
  int64_t steps = 3, warmup = 1;  ///< fewer timed steps than `train`: one run per split
  std::string format = "table";
  MemoryLimitArgs memory;
  double margin = sim::Request{}.safety_margin;
  std::string measurements;      ///< a measurement file instead of live runs
  std::string save, plot;        ///< output paths, empty for none
  bool allow_device_mismatch = false;  ///< --measurements of another device than --gpu/--profile's
  LengthsArgs lengths;           ///< with --measurements: the data of rows without padded_lengths
  DataParallelArgs data_parallel;  ///< --gpus, --link: with --measurements, the rows' processes
};

void validate_options(OptionTable& t, ValidateArgs& a) {
  t.text("device", a.device, "auto, cpu, cuda or cuda:N")
      .quantity("device")
      .integer("effective-batch", a.effective_batch, 1, "sequences per optimizer step")
      .path("measurements", a.measurements, "compare with runs timed elsewhere (.csv/.jsonl, docs/measurements.md) instead of running")
      .quantity("measurements")
      .path("save-measurements", a.save, "also write the measured runs to this .csv (for `lorasim fit`)")
      .text("splits", a.splits, "splits to run, e.g. 1x16,4x4,16x1 (default: every split)")
      .integer("steps", a.steps, 1, "measured optimizer steps per split (median)")
      .integer("warmup", a.warmup, 0, "optimizer steps before measuring");
  add_hardware_options(t, a.hardware);
  add_workload_options(t, a.workload);
  add_memory_limit_options(t, a.memory, "memory limit for the prediction and the runs, e.g. 40GiB");
  t.real("safety-margin", a.margin, 0, 0.9, "fraction of the limit kept free in the prediction")
      .choice("format", a.format, {"table", "csv", "json"}, "table, csv or json")
      .path("plot", a.plot, "also draw predicted and measured step time and peak memory per split to this .svg")
      .toggle("allow-device-mismatch", a.allow_device_mismatch,
              "with --measurements: compare rows of one device with --gpu/--profile of another (default: refused; "
              "without --gpu/--profile the rows' device picks the profile)");
  add_lengths_options(t, a.lengths);
  add_data_parallel_options(t, a.data_parallel);
}

void print_help(const OptionTable& t) {
  std::cout << "usage: lorasim validate [options]\n\n"
               "Runs real training for each split and prints predicted vs measured step time and\n"
               "peak memory with signed errors, their mean and max, how many step times fell\n"
               "within the predicted range, and whether the recommended split was the fastest\n"
               "measured of those whose peak left the safety margin free (regret; regret_any\n"
               "against the fastest that ran).\n\n"
               "examples:\n"
               "  lorasim validate --profile my-h200.toml --device cuda --model qwen3-1.7b --effective-batch 16 --seq-len 512 --steps 8\n"
               "  lorasim validate --profile cpu.toml --device cpu --model tiny --effective-batch 8 --seq-len 64 --format json\n"
               "  lorasim validate --measurements hf-runs.csv --profile a100-hf.toml\n"
               "  lorasim validate --measurements hf-runs.csv --profile a100-hf.toml --plot validate.svg\n"
               "  lorasim validate --measurements sft-runs.jsonl --gpu h200 --lengths lengths.csv --padding longest\n"
               "  lorasim validate --measurements torchrun-rows.csv --gpu h200 --lengths lengths.csv   # rows of 2 processes\n"
               "  lorasim validate --measurements fsdp-rows.csv --gpu h200 --fsdp\n\n"
               "A row with padded_lengths (each timed micro-batch's padded width) is predicted from those\n"
               "widths; --lengths predicts the rows without one from the data's lengths (docs/lengths.md).\n\n"
            << t.description() << "\n";
}

// A measurement file brings its own runs, workloads and effective batches: flags that
// describe live runs would be ignored, so they are refused.
void refuse_live_flags(const OptionTable& t) {
  static const char* const kLiveOnly[] = {"effective-batch", "device", "splits", "steps", "warmup",
                                          "save-measurements", "model", "model-config", "seq-len",
                                          "lora-rank", "lora-alpha", "lora-targets", "precision", "grad-ckpt",
                                          "stack", "attn-impl", "lora-dropout", "allocator", "autocast"};
  std::string given;
  int n = 0;
  for (const char* flag : kLiveOnly)
    if (t.given(flag)) {
      given += (given.empty() ? "--" : ", --") + std::string(flag);
      ++n;
    }
  if (n)
    throw InputError("--measurements compares the runs in the file; " + given + (n > 1 ? " describe" : " describes") +
                     " live runs: drop " + (n > 1 ? "them" : "it") + " or --measurements");
}

// "1x16,4x4" -> {(1,16),(4,4)}; every split must multiply to B and appear once.
std::vector<std::pair<int64_t, int64_t>> parse_splits(const std::string& text, int64_t B) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::set<std::pair<int64_t, int64_t>> seen;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t x = item.find('x');
    if (x == std::string::npos)
      throw InputError("--splits takes MICROxACCUM pairs such as 4x4,16x1, got " + quoted_excerpt(item));
    const int64_t b = parse_int("--splits", item.substr(0, x), 1), a = parse_int("--splits", item.substr(x + 1), 1);
    if (b * a != B)
      throw InputError("--splits " + item + " gives " + std::to_string(b * a) + " sequences per step, not the effective batch " +
                       std::to_string(B));
    if (!seen.insert({b, a}).second)
      throw InputError("--splits lists " + std::to_string(b) + "x" + std::to_string(a) + " twice: name each split once");
    out.emplace_back(b, a);
  }
  return out;
}

// The profile for --measurements: the rows' device's unless --gpu/--profile is given (cli/row_device.h).
hw::Profile measurements_profile(const ValidateArgs& a) {
  const std::vector<calib::Measurement> rows = calib::load_measurements(a.measurements);
  // Rows of several processes are predicted on as many GPUs; --gpus, where given, must be theirs.
  if (a.data_parallel.gpus != 1)
    for (const calib::Measurement& m : rows)
      if (m.processes != a.data_parallel.gpus)
        throw InputError("--gpus " + std::to_string(a.data_parallel.gpus) + ": the run " + calib::run_label(m) + " ran on " +
                         std::to_string(m.processes) + (m.processes == 1 ? " process" : " processes") +
                         "; rows are predicted on as many GPUs as their processes column says: drop --gpus");
  return profile_for_rows(rows, a.hardware, {"validate", a.allow_device_mismatch, false});
}

#ifdef LORASIM_WITH_CALIBRATE  // the live mode, which only lorasim-train has

/// What a live validation compares: the prediction and the runs measured for it.
struct LiveValidation {
  calib::DeviceInfo device;
  sim::Request request;
  sim::Result predicted;
  std::vector<calib::Measurement> runs;
  std::vector<calib::ComparedSplit> rows;  ///< one per run, same order
};

sim::Request live_request(const ValidateArgs& a, const hw::Profile& profile, const calib::DeviceInfo& dev,
                          int64_t memory_limit_bytes) {
  sim::Request req;
  req.hardware = profile.hw;
  req.workload = build_workload(a.workload, dev.bf16_supported);
  req.workload.train.precision = calib::resolve_precision(a.workload.precision, dev).precision;
  req.effective_batch = a.effective_batch;
  req.memory_limit_bytes = memory_limit_bytes;
  req.safety_margin = a.margin;
  return req;
}

/// Trains each chosen split (every predicted one when `splits` is empty), reporting progress.
std::vector<calib::Measurement> run_splits(const ValidateArgs& a, const LiveValidation& v) {
  std::vector<std::pair<int64_t, int64_t>> chosen;
  if (a.splits.empty())
    for (const auto& s : v.predicted.splits) chosen.emplace_back(s.micro_batch, s.accumulation);
  else
    chosen = parse_splits(a.splits, v.request.effective_batch);
  std::cerr << "building " << v.request.workload.arch.name << " on " << v.device.name << " (" << v.device.spec << ")...\n";
  calib::Trainer trainer(v.request.workload, v.device.spec);
  std::vector<calib::Measurement> runs;
  for (size_t i = 0; i < chosen.size(); ++i) {
    calib::RunSpec spec;
    spec.workload = v.request.workload;
    std::tie(spec.micro_batch, spec.accumulation) = chosen[i];
    spec.measure_steps = static_cast<int>(a.steps);
    spec.warmup_steps = static_cast<int>(a.warmup);
    spec.memory_limit_bytes = v.request.memory_limit_bytes;
    const calib::RunResult r = trainer.run(spec);
    runs.push_back(calib::to_measurement(spec.workload, r));
    std::cerr << "[" << i + 1 << "/" << chosen.size() << "] " << spec.micro_batch << "x" << spec.accumulation << ": "
              << (r.oom ? std::string("out of memory") : human_seconds(r.step_time_s) + " per step") << "\n";
  }
  return runs;
}

void print_live_json(const LiveValidation& v, const hw::Profile& profile, const calib::ComparisonSummary& sum) {
  const auto& rows = v.rows;
  nlohmann::json j;
  j["device"] = v.device.name;
  j["gpu_profile"] = profile_json(profile);
  j["workload"] = workload_json(v.request.workload);
  j["effective_batch"] = v.request.effective_batch;
  j["splits"] = nlohmann::json::array();
  for (const auto& c : rows) {
    nlohmann::json s = compared_split_json(c);
    s["predicted_peak_allocated_bytes"] = c.predicted_allocated_bytes;
    s["measured_peak_allocated_bytes"] = measured_json(c.measured_allocated_bytes);
    j["splits"].push_back(s);
  }
  j["summary"] = {{"points", sum.points},
                  {"time_mean_abs_err", sum.time_mean_abs_err},
                  {"time_max_abs_err", sum.time_max_abs_err},
                  {"reserved_mean_abs_err", sum.reserved_mean_abs_err},
                  {"reserved_max_abs_err", sum.reserved_max_abs_err},
                  {"reserved_max_under_err", sum.reserved_max_under_err},
                  {"reserved_max_under_err_worst_case", sum.worst_reserved_max_under_err},
                  {"allocated_mean_abs_err", sum.allocated_mean_abs_err},
                  {"recommended_was_fastest", sum.recommended_was_fastest},
                  {"time_range_coverage", time_range_coverage_json(sum)},
                  {"regret", sum.regret},
                  {"regret_any", sum.regret_any},
                  {"recommended_oom", sum.recommended_oom}};
  if (sum.recommended)
    j["summary"]["recommended"] = {{"micro_batch", rows[*sum.recommended].micro_batch},
                                   {"accumulation", rows[*sum.recommended].accumulation}};
  if (sum.fastest_measured)
    j["summary"]["fastest_measured"] = {{"micro_batch", rows[*sum.fastest_measured].micro_batch},
                                        {"accumulation", rows[*sum.fastest_measured].accumulation}};
  if (sum.fastest_measured_any)
    j["summary"]["fastest_measured_any"] = {{"micro_batch", rows[*sum.fastest_measured_any].micro_batch},
                                            {"accumulation", rows[*sum.fastest_measured_any].accumulation}};
  std::cout << j.dump(2) << "\n";
}

void print_live_csv(const LiveValidation& v) {
  std::cout << "micro_batch,accumulation,predicted_step_time_s,measured_step_time_s,step_time_error,"
               "predicted_peak_reserved_bytes,measured_peak_reserved_bytes,reserved_error,predicted_fits,measured_oom,"
               "predicted_worst_reserved_bytes,predicted_step_time_low_s,predicted_step_time_high_s\n";
  for (const auto& c : v.rows)
    std::cout << c.micro_batch << ',' << c.accumulation << ',' << c.predicted_step_time_s << ','
              << c.measured_step_time_s << ',' << c.step_time_error() << ',' << c.predicted_reserved_bytes << ','
              << c.measured_reserved_bytes << ',' << c.reserved_error() << ',' << (c.predicted_fits ? "true" : "false")
              << ',' << (c.measured_oom ? "true" : "false") << ',' << c.predicted_worst_reserved_bytes << ','
              << c.predicted_step_time_low_s << ',' << c.predicted_step_time_high_s << '\n';
}

void print_live_table(const LiveValidation& v, const hw::Profile& profile, const calib::ComparisonSummary& sum) {
  const auto& rows = v.rows;
  std::cout << "model:    " << v.request.workload.arch.name << ", " << workload_line(v.request.workload) << "\n"
            << "stack:    " << v.request.workload.stack.describe() << "\n"
            << "profile:  " << profile_line(profile) << "\n"
            << "device:   " << v.device.name << "\n\n";
  Table t({"micro", "accum", "step pred", "step meas", "err", "reserved pred", "reserved meas", "err", "fits pred",
           "measured"});
  for (const auto& c : rows) {
    const bool ok = !c.measured_oom;
    t.add({std::to_string(c.micro_batch), std::to_string(c.accumulation), human_seconds(c.predicted_step_time_s),
           ok ? human_seconds(c.measured_step_time_s) : "-", ok ? fixed(100 * c.step_time_error(), 1) + "%" : "-",
           human_bytes(c.predicted_reserved_bytes), ok ? human_bytes(c.measured_reserved_bytes) : "-",
           ok ? fixed(100 * c.reserved_error(), 1) + "%" : "-", c.predicted_fits ? "yes" : "no", ok ? "ok" : "OOM"});
  }
  t.print(std::cout);
  std::cout << "\nstep time:     mean |err| " << fixed(100 * sum.time_mean_abs_err, 1) << "%, max "
            << fixed(100 * sum.time_max_abs_err, 1) << "% over " << sum.points << " splits\n"
            << "peak reserved: mean |err| " << fixed(100 * sum.reserved_mean_abs_err, 1) << "%, max "
            << fixed(100 * sum.reserved_max_abs_err, 1) << "%, largest under-prediction "
            << fixed(100 * sum.reserved_max_under_err, 1) << "% (of the worst case that decides fits: "
            << fixed(100 * sum.worst_reserved_max_under_err, 1) << "%)\n";
  if (sum.time_range_points) std::cout << time_range_line(sum);
  if (!sum.recommended) return;
  const auto& r = rows[*sum.recommended];
  std::cout << "recommended:   " << r.micro_batch << "x" << r.accumulation;
  if (sum.recommended_oom) std::cout << " ran OUT OF MEMORY\n";
  else if (sum.recommended_was_fastest) std::cout << " was the fastest measured\n";
  else if (sum.fastest_measured)
    std::cout << " was not the fastest (" << rows[*sum.fastest_measured].micro_batch << "x"
              << rows[*sum.fastest_measured].accumulation << " was, by " << fixed(100 * sum.regret, 1) << "%)\n";
  else
    std::cout << "\n";
  if (sum.fastest_measured_any && sum.fastest_measured_any != sum.fastest_measured)
    std::cout << "               " << rows[*sum.fastest_measured_any].micro_batch << "x"
              << rows[*sum.fastest_measured_any].accumulation << " ran faster still, by "
              << fixed(100 * sum.regret_any, 1) << "%, but its peak took the safety margin\n";
}

int validate_live(const ValidateArgs& a, const hw::Profile& profile, Format fmt, int64_t memory_limit_bytes) {
  LiveValidation v;
  v.device = calib::resolve_device(a.device);
  if (!hw::same_device_model(profile, identity_of(v.device)))
    std::cerr << "warning: profile '" << profile.hw.name << "' (" << profile.hw.display_name
              << ") describes another device than this " << v.device.name << "; predictions will not match\n";
  v.request = live_request(a, profile, v.device, memory_limit_bytes);
  v.predicted = sim::simulate(v.request);
  v.runs = run_splits(a, v);
  calib::set_device(v.runs, v.device.name, v.device.is_cuda, static_cast<double>(v.device.total_memory_bytes));
  for (const auto& m : v.runs) v.rows.push_back(calib::compare_split(v.predicted, m));
  const calib::ComparisonSummary sum = calib::summarize(v.rows);
  if (!a.save.empty()) calib::write_measurements_csv(v.runs, a.save);
  if (!a.plot.empty())
    write_svg({comparison_chart(v.request.workload, v.request.effective_batch, profile, v.predicted, v.rows,
                                "measured on " + v.device.name)},
              a.plot);
  if (fmt == Format::json) print_live_json(v, profile, sum);
  else if (fmt == Format::csv) print_live_csv(v);
  else print_live_table(v, profile, sum);
  return kOk;
}
#endif

}  // namespace

int cmd_validate(const Args& args) {
  ValidateArgs a;
  a.workload.stack.stack = "lorasim";  // live runs are lorasim's runner; a file's rows name their own stack
  OptionTable t;
  validate_options(t, a);
  if (!t.parse(args)) {
    print_help(t);
    return kOk;
  }
  const Format fmt = parse_format(a.format);
  if (!a.measurements.empty()) refuse_live_flags(t);
  else if (a.allow_device_mismatch)
    throw InputError("--allow-device-mismatch compares a --measurements file with another device's profile; "
                     "live runs warn instead: drop it or give --measurements");
  const bool lengths = lengths_given(t);
  if (lengths && a.measurements.empty())
    throw InputError("validate --lengths predicts the rows of a measurement file: add --measurements FILE (live "
                     "runs on a lengths file are `lorasim train --lengths`)");
  check_outputs({{"--save-measurements", a.save, ".csv"}, {"--plot", a.plot, ".svg"}},
                {{"--measurements", a.measurements, ""}, {"--lengths", a.lengths.file, ""}, {"--profile", a.hardware.profile, ""},
                 {"--model-config", a.workload.model_config, ""}});
  const hw::Profile profile = a.measurements.empty() ? select_profile(a.hardware) : measurements_profile(a);
  const int64_t memory_limit_bytes = checked_memory_limit(a.memory, profile.hw.memory_bytes, profile.hw.display_name);
  if (!a.measurements.empty())
    return validate_measurements(a.measurements, profile, fmt, memory_limit_bytes, a.margin, a.plot,
                                 lengths ? &a.lengths : nullptr,
                                 a.data_parallel.link.empty() ? std::nullopt
                                                              : std::optional<model::Link>(model::parse_link(a.data_parallel.link)),
                                 a.data_parallel.fsdp);
  if (a.data_parallel.fsdp)
    throw InputError("--fsdp: live validate trains one process (lorasim's runner); compare FSDP runs from their rows "
                     "with --measurements FILE --fsdp");
  if (a.data_parallel.gpus > 1)
    throw InputError("--gpus " + std::to_string(a.data_parallel.gpus) +
                     ": live validate trains one process (lorasim's runner); compare data-parallel runs from their rows "
                     "with --measurements FILE (the callback's processes column sets the GPUs)");
  // Refused here, before LibTorch loads and a model is built.
  if (!a.splits.empty()) parse_splits(a.splits, a.effective_batch);
  require_runner_stack(build_stack(a.workload.stack), "validate");
#ifndef LORASIM_WITH_CALIBRATE
  // live runs need LibTorch
  exec_train_binary("validate", args, "compare runs you measured instead: `lorasim validate --measurements FILE` "
                                      "(lorasim_hf's LorasimCallback writes one)");
#else
  return validate_live(a, profile, fmt, memory_limit_bytes);
#endif
}

}  // namespace lorasim::cli
