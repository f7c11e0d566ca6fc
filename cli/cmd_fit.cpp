// `lorasim fit`: a hardware profile fitted to timed runs from any framework (a measurement
// file), so a user's own training stack gets predictions as good as lorasim's runner.
#include <iostream>
#include <string>
#include <vector>

#include "calibrate/convert.h"
#include "calibrate/fit.h"
#include "calibrate/measurement_io.h"
#include "calibrate/measurement_label.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/fit_record.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/output_path.h"
#include "cli/row_device.h"
#include "hwprofiles/profile.h"
#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::cli {
namespace {

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
  std::string out, overlap, mode = "auto", stack;
  bool allow_device_mismatch = false;
  OptionTable t;
  t.paths("measurements", files,
          "timed runs, .csv or .jsonl (docs/measurements.md); required. Repeat it to pool several files, "
          "e.g. calibrations of one GPU type on different machines")
      .quantity("measurements")
      .path("out", out, "profile to write (TOML, named .toml); required")
      .text("stack", stack, "the training stack the runs were made with, hf-peft or lorasim: rows of another "
            "stack are refused (default: the rows' own, which must be one; a file without a stack column is lorasim's runner)");
  add_hardware_options(t, ha);
  t.choice("overlap", overlap, {"max", "sum"},
           "max: a GPU (host dispatch overlaps device work); sum: a CPU (default: the base profile's)")
      .toggle("allow-device-mismatch", allow_device_mismatch,
              "fit rows of one device onto --gpu/--profile of another (default: refused; without --gpu/--profile "
              "the rows' device picks the base)")
      .choice("fit-mode", mode, {"auto", "anchored", "full"},
       "auto: refit every coefficient when the rows identify them (host and device timed apart, as "
       "`lorasim calibrate` writes them), else anchored; anchored: scale groups of the base profile's "
       "coefficients, only those the rows identify; full: refit every coefficient");
  if (!t.parse(args)) {
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
              << t.description() << "\n";
    return kOk;
  }
  if (files.empty()) throw InputError("--measurements FILE is required");
  if (out.empty()) throw InputError("--out FILE is required: where to write the profile");
  std::vector<FileArg> inputs;
  for (const std::string& f : files) inputs.push_back({"--measurements", f, ""});
  check_distinct_inputs(inputs);
  if (!ha.profile.empty()) inputs.push_back({"--profile", ha.profile, ""});
  check_outputs({{"--out", out, ".toml"}}, inputs);
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
  refuse_several_processes(rows, "fit");
  hw::Profile profile = profile_for_rows(rows, ha, {"fit", allow_device_mismatch, true});
  // The base's overlap stands (a CPU profile's "sum" must survive a refit) unless --overlap says.
  if (!overlap.empty()) profile.hw.overlap = overlap == "max" ? model::Overlap::max : model::Overlap::sum;
  const std::string base = profile.source_text_name;
  const calib::FitReport rep = calib::fit_profile(
      rows, profile.hw,
      mode == "full" ? calib::FitMode::full : mode == "anchored" ? calib::FitMode::anchored : calib::FitMode::automatic);
  record_fit(profile, rep,
             {command, base, "", {{"measurements", measurements}, {"rows", static_cast<int64_t>(rows.size())}}});
  // An anchored fit scales the base's rates in the base's precision; a full fit's rates are
  // those of the rows.
  if (!rep.anchored && model::training_stack(rep.stack).calibrates_device())
    profile.hw.coefficients_precision = rows.front().workload.train.precision;
  hw::write_profile_file(profile, out);

  print_fit(std::cout, rep, base);
  std::cout << "stack: " << model::stack_name(fitted_stack) << "\nwrote " << out << "\n";
  return kOk;
}

}  // namespace lorasim::cli
