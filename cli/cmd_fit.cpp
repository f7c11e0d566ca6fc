// `lorasim fit`: a hardware profile fitted to timed runs from any framework (a measurement
// file), so a user's own training stack gets predictions as good as lorasim's runner.
#include <iostream>
#include <string>
#include <vector>

#include "calibrate/convert.h"
#include "calibrate/fit.h"
#include "calibrate/measurement_io.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/output_path.h"
#include "hwprofiles/profile.h"
#include "model/error.h"

namespace lorasim::cli {

int cmd_fit(const Args& args) {
  HardwareArgs ha;
  std::vector<std::string> files;
  std::string out, overlap = "max";
  po::options_description desc("Options");
  desc.add_options()
      ("help", "show this help")
      ("measurements", po::value(&files)->composing(),
       "timed runs, .csv or .jsonl (docs/measurements.md); required. Repeat it to pool several files, "
       "e.g. calibrations of one GPU type on different machines")
      ("out", po::value(&out), "profile to write (TOML); required");
  add_hardware_options(desc, ha);
  desc.add_options()("overlap", po::value(&overlap)->default_value(overlap),
                     "max: a GPU (host dispatch overlaps device work); sum: a CPU");
  const po::variables_map vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << "usage: lorasim fit --measurements FILE --out PROFILE [--gpu NAME | --profile FILE]\n\n"
                 "Fits the cost model to timed training runs (for example HF Trainer + PEFT runs you\n"
                 "timed: one row per run with model, seq_len, micro_batch, accumulation, step_time_s\n"
                 "and optionally peak memory) and writes a profile. The datasheet figures come from\n"
                 "--gpu or --profile. Three to five splits of one workload are enough to predict the\n"
                 "rest; more models and sequence lengths make it predict those too.\n\n"
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
  hw::Profile profile = select_profile(ha);
  profile.hw.overlap = overlap == "max" ? model::Overlap::max : model::Overlap::sum;
  const calib::FitReport rep = calib::fit_profile(rows, profile.hw);
  profile.hw = rep.hardware;
  profile.hw.coefficients_precision = rows.front().workload.train.precision;
  calib::set_expected_errors(profile.hw, rep);
  profile.origin_source = command;
  profile.calibration = {};
  profile.calibration.set("measurements", measurements);
  profile.calibration.set("rows", static_cast<int64_t>(rows.size()));
  profile.calibration.set("time_rms_rel", rep.time_rms_rel);
  profile.calibration.set("time_max_rel", rep.time_max_rel);
  profile.calibration.set("reserved_rms_rel", rep.reserved_rms_rel);
  hw::write_profile_file(profile, out);

  Table t({"run", "step pred", "step meas", "err", "reserved pred", "reserved meas", "err"});
  for (const auto& r : rep.residuals) {
    const bool mem = calib::measured(r.measured_reserved_bytes);
    t.add({r.label, human_seconds(r.predicted_step_time_s), human_seconds(r.measured_step_time_s),
           fixed(100 * (r.predicted_step_time_s / r.measured_step_time_s - 1), 1) + "%",
           human_bytes(r.predicted_reserved_bytes), mem ? human_bytes(r.measured_reserved_bytes) : "-",
           mem ? fixed(100 * (r.predicted_reserved_bytes / r.measured_reserved_bytes - 1), 1) + "%" : "-"});
  }
  t.print(std::cout);
  std::cout << "\nfit over " << rep.time_points << " runs: step time rms " << fixed(100 * rep.time_rms_rel, 1)
            << "%, max " << fixed(100 * rep.time_max_rel, 1) << "%";
  if (rep.memory_points)
    std::cout << "; peak reserved rms " << fixed(100 * rep.reserved_rms_rel, 1) << "%, max "
              << fixed(100 * rep.reserved_max_rel, 1) << "%";
  std::cout << "\nwrote " << out << "\n";
  return kOk;
}

}  // namespace lorasim::cli
