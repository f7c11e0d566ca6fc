// `lorasim validate`: measures real splits on this machine's device and compares them with
// the prediction from a profile, so users can trust (or correct) it.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/compare.h"
#include "calibrate/measurement.h"
#include "calibrate/measurement_io.h"
#ifdef LORASIM_WITH_CALIBRATE
#include "calibrate/runner.h"
#include "cli/device_profile.h"
#endif
#include "cli/args.h"
#include "model/error.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/forward.h"
#include "cli/output_path.h"
#include "cli/split_charts.h"
#include "cli/validate_measurements.h"
#include "simulator/simulate.h"

namespace lorasim::cli {
namespace {

#ifdef LORASIM_WITH_CALIBRATE  // helpers of the live mode, which only lorasim-train has
// "1x16,4x4" -> {(1,16),(4,4)}; every split must multiply to B.
std::vector<std::pair<int64_t, int64_t>> parse_splits(const std::string& text, int64_t B) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t x = item.find('x');
    if (x == std::string::npos)
      throw InputError("--splits takes MICROxACCUM pairs such as 4x4,16x1, got '" + item + "'");
    const int64_t b = parse_int("--splits", item.substr(0, x), 1), a = parse_int("--splits", item.substr(x + 1), 1);
    if (b * a != B)
      throw InputError("--splits " + item + " gives " + std::to_string(b * a) + " sequences per step, not the effective batch " +
                       std::to_string(B));
    out.emplace_back(b, a);
  }
  return out;
}

nlohmann::json num_or_null(double v) { return calib::measured(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
#endif

}  // namespace

int cmd_validate(const Args& args) {
  WorkloadArgs wa;
  HardwareArgs ha;
  std::string device = "auto", effective_batch = "16", splits, steps = "3", warmup = "1", format = "table";
  std::string memory_limit, margin = "0.05", measurements, save, plot;
  po::options_description desc("Options");
  desc.add_options()
      ("help", "show this help")
      ("device", po::value(&device)->default_value(device), "auto, cpu, cuda or cuda:N")
      ("effective-batch", po::value(&effective_batch)->default_value(effective_batch), "sequences per optimizer step")
      ("measurements", po::value(&measurements), "compare with runs timed elsewhere (.csv/.jsonl, docs/measurements.md) instead of running")
      ("save-measurements", po::value(&save), "also write the measured runs to this .csv (for `lorasim fit`)")
      ("splits", po::value(&splits), "splits to run, e.g. 1x16,4x4,16x1 (default: every split)")
      ("steps", po::value(&steps)->default_value(steps), "measured optimizer steps per split (median)")
      ("warmup", po::value(&warmup)->default_value(warmup), "optimizer steps before measuring");
  add_hardware_options(desc, ha);
  add_workload_options(desc, wa);
  desc.add_options()
      ("memory-limit", po::value(&memory_limit), "memory limit for the prediction and the runs, e.g. 40GiB")
      ("safety-margin", po::value(&margin)->default_value(margin), "fraction of the limit kept free in the prediction")
      ("format", po::value(&format)->default_value(format), "table, csv or json")
      ("plot", po::value(&plot), "also draw predicted and measured step time and peak memory per split to this .svg");
  const po::variables_map vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << "usage: lorasim validate [options]\n\n"
                 "Runs real training for each split and prints predicted vs measured step time and\n"
                 "peak memory with signed errors, their mean and max, and whether the recommended\n"
                 "split was the fastest measured.\n\n"
                 "examples:\n"
                 "  lorasim validate --profile my-h200.toml --device cuda --model qwen3-1.7b --effective-batch 16 --seq-len 512 --steps 8\n"
                 "  lorasim validate --profile cpu.toml --device cpu --model tiny --effective-batch 8 --seq-len 64 --format json\n"
                 "  lorasim validate --measurements hf-runs.csv --profile a100-hf.toml\n"
                 "  lorasim validate --measurements hf-runs.csv --profile a100-hf.toml --plot validate.svg\n\n"
              << desc << "\n";
    return kOk;
  }
  const Format fmt = parse_format(format);
  if (vm.count("plot")) check_writable("--plot", plot);
  const hw::Profile profile = select_profile(ha);
  if (!measurements.empty())
    return validate_measurements(measurements, profile, fmt,
                                 memory_limit.empty() ? 0 : parse_bytes("--memory-limit", memory_limit),
                                 parse_real("--safety-margin", margin, 0, 0.9), plot);
#ifndef LORASIM_WITH_CALIBRATE
  exec_train_binary("validate", args);  // live runs need LibTorch
#else
  if (!save.empty()) check_measurements_writable("--save-measurements", save);
  const calib::DeviceInfo dev = calib::resolve_device(device);
  if (!same_gpu_model(profile, dev))
    std::cerr << "warning: profile '" << profile.hw.name << "' (" << profile.hw.display_name
              << ") describes another device than this " << dev.name << "; predictions will not match\n";

  sim::Request req;
  req.hardware = profile.hw;
  req.workload = build_workload(wa, profile.hw.bf16_supported && dev.is_cuda);
  if (!dev.is_cuda) req.workload.train.precision = model::Precision::fp32;
  req.effective_batch = parse_int("--effective-batch", effective_batch, 1);
  if (!memory_limit.empty()) req.memory_limit_bytes = parse_bytes("--memory-limit", memory_limit);
  req.safety_margin = parse_real("--safety-margin", margin, 0, 0.9);
  const sim::Result predicted = sim::simulate(req);

  std::vector<std::pair<int64_t, int64_t>> chosen;
  if (splits.empty())
    for (const auto& s : predicted.splits) chosen.emplace_back(s.micro_batch, s.accumulation);
  else
    chosen = parse_splits(splits, req.effective_batch);

  std::cerr << "building " << req.workload.arch.name << " on " << dev.name << " (" << dev.spec << ")...\n";
  calib::Trainer trainer(req.workload, dev.spec);
  std::vector<calib::ComparedSplit> rows;
  std::vector<calib::Measurement> measured_runs;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const auto [b, a] = chosen[i];
    const sim::Split* p = nullptr;
    for (const auto& s : predicted.splits)
      if (s.micro_batch == b) p = &s;
    calib::RunSpec spec;
    spec.workload = req.workload;
    spec.micro_batch = b;
    spec.accumulation = a;
    spec.measure_steps = static_cast<int>(parse_int("--steps", steps, 1));
    spec.warmup_steps = static_cast<int>(parse_int("--warmup", warmup, 0));
    spec.memory_limit_bytes = req.memory_limit_bytes;
    const calib::RunResult r = trainer.run(spec);
    calib::ComparedSplit c;
    c.micro_batch = b;
    c.accumulation = a;
    c.predicted_step_time_s = p->step_time_s;
    c.predicted_allocated_bytes = p->peak_allocated_bytes;
    c.predicted_reserved_bytes = p->peak_reserved_bytes;
    c.predicted_fits = p->fits;
    c.measured_oom = r.oom;
    if (!r.oom) {
      c.measured_step_time_s = r.step_time_s;
      c.measured_allocated_bytes = static_cast<double>(r.peak_allocated_bytes);
      c.measured_reserved_bytes = static_cast<double>(r.peak_reserved_bytes);
    }
    rows.push_back(c);
    calib::Measurement m;
    m.workload = spec.workload;
    m.micro_batch = b;
    m.accumulation = a;
    m.oom = r.oom;
    if (!r.oom) {
      m.step_time_s = r.step_time_s;
      m.micro_batch_time_s = r.micro_batch_time_s;
      m.host_time_s = r.host_time_s;
      m.device_time_s = r.device_time_s;
      m.optimizer_time_s = r.optimizer_time_s;
      m.peak_allocated_bytes = c.measured_allocated_bytes;
      m.peak_reserved_bytes = c.measured_reserved_bytes;
    }
    measured_runs.push_back(m);
    std::cerr << "[" << i + 1 << "/" << chosen.size() << "] " << b << "x" << a << ": "
              << (r.oom ? std::string("out of memory") : human_seconds(r.step_time_s) + " per step") << "\n";
  }
  const calib::ComparisonSummary sum = calib::summarize(rows);
  if (!save.empty()) calib::write_measurements_csv(measured_runs, save);
  if (!plot.empty())
    write_svg({comparison_chart(req.workload, req.effective_batch, profile, predicted, rows, "measured on " + dev.name)},
              plot);

  if (fmt == Format::json) {
    nlohmann::json j;
    j["device"] = dev.name;
    j["gpu_profile"] = profile_json(profile);
    j["workload"] = workload_json(req.workload);
    j["effective_batch"] = req.effective_batch;
    j["splits"] = nlohmann::json::array();
    for (const auto& c : rows)
      j["splits"].push_back({{"micro_batch", c.micro_batch}, {"accumulation", c.accumulation},
                             {"predicted_step_time_s", c.predicted_step_time_s},
                             {"measured_step_time_s", num_or_null(c.measured_step_time_s)},
                             {"step_time_error", num_or_null(c.step_time_error())},
                             {"predicted_peak_allocated_bytes", c.predicted_allocated_bytes},
                             {"measured_peak_allocated_bytes", num_or_null(c.measured_allocated_bytes)},
                             {"predicted_peak_reserved_bytes", c.predicted_reserved_bytes},
                             {"measured_peak_reserved_bytes", num_or_null(c.measured_reserved_bytes)},
                             {"reserved_error", num_or_null(c.reserved_error())},
                             {"predicted_fits", c.predicted_fits}, {"measured_oom", c.measured_oom}});
    j["summary"] = {{"points", sum.points},
                    {"time_mean_abs_err", sum.time_mean_abs_err},
                    {"time_max_abs_err", sum.time_max_abs_err},
                    {"reserved_mean_abs_err", sum.reserved_mean_abs_err},
                    {"reserved_max_abs_err", sum.reserved_max_abs_err},
                    {"reserved_max_under_err", sum.reserved_max_under_err},
                    {"allocated_mean_abs_err", sum.allocated_mean_abs_err},
                    {"recommended_was_fastest", sum.recommended_was_fastest},
                    {"regret", sum.regret},
                    {"recommended_oom", sum.recommended_oom}};
    if (sum.recommended)
      j["summary"]["recommended"] = {{"micro_batch", rows[*sum.recommended].micro_batch},
                                     {"accumulation", rows[*sum.recommended].accumulation}};
    if (sum.fastest_measured)
      j["summary"]["fastest_measured"] = {{"micro_batch", rows[*sum.fastest_measured].micro_batch},
                                          {"accumulation", rows[*sum.fastest_measured].accumulation}};
    std::cout << j.dump(2) << "\n";
    return kOk;
  }
  if (fmt == Format::csv) {
    std::cout << "micro_batch,accumulation,predicted_step_time_s,measured_step_time_s,step_time_error,"
                 "predicted_peak_reserved_bytes,measured_peak_reserved_bytes,reserved_error,predicted_fits,measured_oom\n";
    for (const auto& c : rows)
      std::cout << c.micro_batch << ',' << c.accumulation << ',' << c.predicted_step_time_s << ','
                << c.measured_step_time_s << ',' << c.step_time_error() << ',' << c.predicted_reserved_bytes << ','
                << c.measured_reserved_bytes << ',' << c.reserved_error() << ',' << (c.predicted_fits ? "true" : "false")
                << ',' << (c.measured_oom ? "true" : "false") << '\n';
    return kOk;
  }
  std::cout << "model:    " << req.workload.arch.name << ", " << workload_line(req.workload) << "\n"
            << "profile:  " << profile_line(profile) << "\n"
            << "device:   " << dev.name << "\n\n";
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
            << fixed(100 * sum.reserved_max_abs_err, 1) << "%\n";
  if (sum.recommended) {
    const auto& r = rows[*sum.recommended];
    std::cout << "recommended:   " << r.micro_batch << "x" << r.accumulation;
    if (sum.recommended_oom) std::cout << " ran OUT OF MEMORY\n";
    else if (sum.recommended_was_fastest) std::cout << " was the fastest measured\n";
    else if (sum.fastest_measured)
      std::cout << " was not the fastest (" << rows[*sum.fastest_measured].micro_batch << "x"
                << rows[*sum.fastest_measured].accumulation << " was, by " << fixed(100 * sum.regret, 1) << "%)\n";
    else
      std::cout << "\n";
  }
  return kOk;
#endif
}

}  // namespace lorasim::cli
