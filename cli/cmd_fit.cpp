// `lorasim fit`: a hardware profile fitted to timed runs from any framework (a measurement
// file), so a user's own training stack gets predictions as good as lorasim's runner.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "calibrate/convert.h"
#include "calibrate/fit.h"
#include "calibrate/measurement_io.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/output_path.h"
#include "hwprofiles/profile.h"
#include "model/error.h"

namespace lorasim::cli {
namespace {

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string signed_percent(double rel) { return (rel >= 0 ? "+" : "") + fixed(100 * rel, 0) + "%"; }

// One fit describes one stack: rows of two stacks would blend their costs into one profile.
model::StackKind rows_stack(const std::vector<calib::Measurement>& rows, const std::string& flag) {
  const model::StackKind want =
      flag.empty() ? rows.front().workload.stack.kind : [&] {
        try {
          return model::parse_stack(flag);
        } catch (const InputError& e) {
          throw InputError(std::string("--stack: ") + e.what());
        }
      }();
  for (const calib::Measurement& m : rows)
    if (m.workload.stack.kind != want)
      throw InputError(std::string("the measurements hold runs of the ") + model::stack_name(m.workload.stack.kind) +
                       " stack (" + calib::workload_label(m) + ") " + (flag.empty() ? "and of the " : "but --stack is ") +
                       model::stack_name(want) + (flag.empty() ? " stack" : "") +
                       ": fit one stack at a time (a file without a stack column is lorasim's runner)");
  return want;
}

}  // namespace

int cmd_fit(const Args& args) {
  HardwareArgs ha;
  std::vector<std::string> files;
  std::string out, overlap = "max", mode = "auto", stack;
  po::options_description desc("Options");
  desc.add_options()
      ("help", "show this help")
      ("measurements", po::value(&files)->composing(),
       "timed runs, .csv or .jsonl (docs/measurements.md); required. Repeat it to pool several files, "
       "e.g. calibrations of one GPU type on different machines")
      ("out", po::value(&out), "profile to write (TOML); required")
      ("stack", po::value(&stack), "the training stack the runs were made with, hf-peft or lorasim: rows of another "
       "stack are refused (default: the rows' own, which must be one; a file without a stack column is lorasim's runner)");
  add_hardware_options(desc, ha);
  desc.add_options()("overlap", po::value(&overlap)->default_value(overlap),
                     "max: a GPU (host dispatch overlaps device work); sum: a CPU")
      ("fit-mode", po::value(&mode)->default_value(mode),
       "auto: refit every coefficient when the rows identify them (host and device timed apart, as "
       "`lorasim calibrate` writes them), else anchored; anchored: scale groups of the base profile's "
       "coefficients, only those the rows identify; full: refit every coefficient");
  const po::variables_map vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << "usage: lorasim fit --measurements FILE --out PROFILE [--gpu NAME | --profile FILE]\n\n"
                 "Fits the cost model to timed training runs (for example HF Trainer + PEFT runs you\n"
                 "timed: one row per run with model, seq_len, micro_batch, accumulation, step_time_s\n"
                 "and optionally peak memory) and writes a profile. The datasheet figures come from\n"
                 "--gpu or --profile, and so do the coefficients: step times of a few runs refine the\n"
                 "base profile (host and device speed, activation memory) and keep what they cannot\n"
                 "identify; the output lists what the rows moved.\n\n"
                 "examples:\n"
                 "  lorasim fit --measurements hf-runs.csv --gpu a100-80gb --out a100-hf.toml\n"
                 "  lorasim fit --measurements calib-a.csv --measurements calib-b.csv --gpu h200 --out h200.toml\n"
                 "  lorasim validate --measurements more-runs.csv --profile a100-hf.toml\n\n"
              << desc << "\n";
    return kOk;
  }
  if (files.empty()) throw InputError("--measurements FILE is required");
  if (out.empty()) throw InputError("--out FILE is required: where to write the profile");
  if (overlap != "max" && overlap != "sum") throw InputError("--overlap must be max or sum, got '" + overlap + "'");
  if (mode != "auto" && mode != "anchored" && mode != "full")
    throw InputError("--fit-mode must be auto, anchored or full, got '" + mode + "'");
  check_writable("--out", out);
  // Every file is read (and any error reported) before anything is written.
  std::vector<calib::Measurement> rows;
  std::string measurements, command = "lorasim fit";
  for (const std::string& f : files) {
    const std::vector<calib::Measurement> part = calib::load_measurements(f);
    rows.insert(rows.end(), part.begin(), part.end());
    measurements += (measurements.empty() ? "" : " ") + f;
    command += " --measurements " + f;
  }
  const model::StackKind fitted_stack = rows_stack(rows, stack);
  hw::Profile profile = select_profile(ha);
  profile.hw.overlap = overlap == "max" ? model::Overlap::max : model::Overlap::sum;
  const std::string base = profile.source_text_name;
  const calib::FitReport rep = calib::fit_profile(
      rows, profile.hw,
      mode == "full" ? calib::FitMode::full : mode == "anchored" ? calib::FitMode::anchored : calib::FitMode::automatic);
  profile.hw = rep.hardware;
  // An anchored fit scales the base's rates in the base's precision; a full fit's rates are
  // those of the rows.
  if (!rep.anchored && rep.stack == model::StackKind::lorasim)
    profile.hw.coefficients_precision = rows.front().workload.train.precision;
  calib::set_expected_errors(profile.hw, rep);
  if (rep.stack == model::StackKind::hf_peft) {
    // The GPU half and its provenance are the base's; the stack's terms are this fit's.
    profile.hw.origin(rep.stack).source = command;
  } else {
    profile.origin_source = command;
    profile.calibration = {};
  }
  profile.calibration.set("measurements", measurements);
  profile.calibration.set("rows", static_cast<int64_t>(rows.size()));
  profile.calibration.set("time_rms_rel", rep.time_rms_rel);
  profile.calibration.set("time_max_rel", rep.time_max_rel);
  profile.calibration.set("reserved_rms_rel", rep.reserved_rms_rel);
  profile.calibration.set("fit", std::string(rep.anchored ? "anchored" : "full"));
  profile.calibration.set("base", base);
  profile.calibration.set("stack", std::string(model::stack_name(fitted_stack)));
  for (const calib::GroupScale& g : rep.scales)
    if (g.identified) profile.calibration.set(g.group + "_scale", g.scale);
  std::string moved;
  for (const calib::MovedCoefficient& m : rep.moved) moved += (moved.empty() ? "" : " ") + m.name;
  if (!moved.empty()) profile.calibration.set("moved", moved);
  hw::write_profile_file(profile, out);

  print_residuals(std::cout, rep.residuals);
  std::cout << "\nfit over " << rep.time_points << " runs: step time rms " << fixed(100 * rep.time_rms_rel, 1)
            << "%, max " << fixed(100 * rep.time_max_rel, 1) << "%";
  if (rep.memory_points)
    std::cout << "; peak reserved rms " << fixed(100 * rep.reserved_rms_rel, 1) << "%, max "
              << fixed(100 * rep.reserved_max_rel, 1) << "%";
  std::cout << "\n" << (rep.anchored ? "anchored on " : "refitted from ") << base << "; the rows moved "
            << (rep.moved.empty() ? "nothing" : std::to_string(rep.moved.size()) + " coefficients:") << "\n";
  for (const calib::MovedCoefficient& m : rep.moved)
    std::cout << "  " << m.name << " " << scientific(m.before) << " -> " << scientific(m.after)
              << (m.before != 0 ? " (" + signed_percent(m.after / m.before - 1) + ")" : "") << "\n";
  for (const calib::GroupScale& g : rep.scales)
    std::cout << "  " << g.group << (g.identified ? " x" + fixed(g.scale, 3) : " kept") << ": " << g.why << "\n";
  std::cout << "stack: " << model::stack_name(fitted_stack) << "\nwrote " << out << "\n";
  return kOk;
}

}  // namespace lorasim::cli
