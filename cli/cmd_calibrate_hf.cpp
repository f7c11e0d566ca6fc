// `lorasim calibrate --stack hf-peft`: short real Transformers + PEFT training runs through the
// Python probe, the hf-peft stack's terms fitted on a GPU profile, and the profile written with
// its [stack.hf-peft] table. Needs no LibTorch: both binaries run it.
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <chrono>

#include "calibrate/convert.h"
#include "calibrate/fit.h"
#include "calibrate/hf_plan.h"
#include "calibrate/hf_probe.h"
#include "calibrate/measurement_io.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/output_path.h"
#include "hwprofiles/profile.h"
#include "model/architecture.h"
#include "model/error.h"
#include "model/stack.h"

namespace lorasim::cli {
namespace {

// A private directory for the probe's plan files, removed however the calibration ends.
struct WorkDir {
  std::filesystem::path path;
  WorkDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lorasim-probe-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw CalibrationError("cannot create a temporary directory for the probe's plan");
    path = tmpl;
  }
  ~WorkDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

bool calibrates_hf_stack(const Args& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string value;
    if (a == "--stack" && i + 1 < args.size()) value = args[i + 1];
    else if (a.rfind("--stack=", 0) == 0) value = a.substr(8);
    else continue;
    try {
      return model::parse_stack(value) == model::StackKind::hf_peft;
    } catch (const InputError&) {
      return false;  // the calibrate command's own parsing reports the bad value
    }
  }
  return false;
}

int cmd_calibrate_hf(const Args& args) {
  std::string out, save, device = "cuda", model, python, steps = "3", warmup = "1", precision = "bf16";
  bool dry_run = false;
  HardwareArgs ha;
  ha.gpu.clear();
  StackArgs sa;
  sa.stack = "hf-peft";
  po::options_description desc("Options");
  desc.add_options()
      ("help", "show this help")
      ("out", po::value(&out), "profile to write (TOML): the GPU profile with its [stack.hf-peft] terms; required")
      ("gpu", po::value(&ha.gpu), "the GPU's embedded profile, whose device terms are kept (see `lorasim profiles`)")
      ("profile", po::value(&ha.profile), "or a profile file, e.g. from `lorasim calibrate` of this GPU")
      ("device", po::value(&device)->default_value(device), "where the probe trains: cuda, cuda:N or cpu")
      ("python", po::value(&python), "the Python with torch, transformers and peft (default: $LORASIM_PYTHON, else python3)")
      ("model", po::value(&model), "reference model preset (default: qwen3-1.7b on CUDA, tiny on the CPU)")
      ("precision", po::value(&precision)->default_value(precision), "weights precision on CUDA: bf16 or fp16 (the CPU runs fp32)")
      ("steps", po::value(&steps)->default_value(steps), "timed optimizer steps per run (median)")
      ("warmup", po::value(&warmup)->default_value(warmup), "optimizer steps before timing")
      ("save-measurements", po::value(&save), "also write every measured run to this .csv (refit later with `lorasim fit`)")
      ("dry-run", po::bool_switch(&dry_run), "print the plan's runs, sized for the GPU, and exit without running them");
  add_stack_options(desc, sa);
  const po::variables_map vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << "usage: lorasim calibrate --stack hf-peft --out FILE (--gpu NAME | --profile FILE) [options]\n\n"
                 "Calibrates the stack most people train with: runs short real Hugging Face\n"
                 "Transformers + PEFT training steps (the step Trainer runs) of a reference model\n"
                 "at several depths (one layer to full), and of a narrower one, through lorasim's\n"
                 "Python probe (python/lorasim_hf) in your own Python, then fits the stack's host,\n"
                 "device and memory terms on the GPU's profile and writes it. About a minute on\n"
                 "an H200; on a smaller GPU the runs shrink to what its memory holds.\n"
                 "--attn-impl, --lora-dropout, --autocast and --allocator describe how you train;\n"
                 "the plan also varies each of them once.\n\n"
                 "examples:\n"
                 "  lorasim calibrate --stack hf-peft --gpu h200 --out h200-hf.toml\n"
                 "  lorasim calibrate --stack hf-peft --gpu t4 --dry-run\n"
                 "  lorasim calibrate --stack hf-peft --profile my-a100.toml --python ~/venv/bin/python --out a100-hf.toml\n"
                 "  lorasim calibrate --stack hf-peft --device cpu --profile cpu.toml --out cpu-hf.toml\n\n"
              << desc << "\n";
    return kOk;
  }
  if (out.empty() && !dry_run) throw InputError("--out FILE is required: where to write the profile");
  if (ha.gpu.empty() && ha.profile.empty())
    throw InputError("--gpu NAME or --profile FILE is required: the GPU's profile, whose device terms the "
                     "hf-peft terms are fitted on (see `lorasim profiles`)");
  if (!dry_run) check_writable("--out", out);
  if (!save.empty() && !dry_run) check_measurements_writable("--save-measurements", save);
  hw::Profile profile = select_profile(ha);
  const bool is_cuda = device.rfind("cuda", 0) == 0;
  if (!is_cuda && device != "cpu") throw InputError("--device must be cuda, cuda:N or cpu, got '" + device + "'");

  calib::HfPlanOptions opt;
  opt.is_cuda = is_cuda;
  opt.reference.arch = model::preset(model.empty() ? (is_cuda ? "qwen3-1.7b" : "tiny") : model);
  opt.reference.stack = build_stack(sa);
  if (opt.reference.stack.kind != model::StackKind::hf_peft)
    throw InputError("--stack: this path calibrates hf-peft; `lorasim calibrate` without --stack calibrates lorasim's runner");
  opt.reference.train.precision = is_cuda ? model::parse_precision(precision) : model::Precision::fp32;
  if (!is_cuda) opt.reference.stack.autocast = false;  // the CPU trains in fp32
  opt.reference.validate();
  opt.measure_steps = static_cast<int>(parse_int("--steps", steps, 1));
  opt.warmup_steps = static_cast<int>(parse_int("--warmup", warmup, 0));
  if (is_cuda) {
    // Runs sized for an H200 shrink to what the profile's GPU holds.
    opt.hardware = profile.hw;
    opt.memory_limit_bytes = static_cast<double>(profile.hw.memory_bytes);
  }

  const std::vector<calib::HfPlannedRun> plan = calib::default_hf_plan(opt);
  if (dry_run) {
    std::cout << plan.size() << " runs of the hf-peft stack on " << device << ", sized for the "
              << profile.hw.display_name << " (" << human_bytes(static_cast<double>(profile.hw.memory_bytes)) << "):\n";
    for (const calib::HfPlannedRun& r : plan) std::cout << "  " << r.label() << "\n";
    return kOk;
  }
  WorkDir work;
  calib::ProbeOptions popt;
  const char* env_python = std::getenv("LORASIM_PYTHON");
  popt.python = !python.empty() ? python : (env_python && *env_python ? env_python : "python3");
  popt.device = device;
  popt.work_dir = work.path.string();
  popt.warmup_steps = opt.warmup_steps;
  popt.measure_steps = opt.measure_steps;
  std::cerr << "calibrating the hf-peft stack on " << device << " with " << opt.reference.arch.name << " ("
            << plan.size() << " runs, python: " << popt.python << ")\n";
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<calib::Measurement> rows = calib::run_probe(plan, popt);
  const double duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const calib::FitReport fit = calib::fit_profile(rows, profile.hw, calib::FitMode::automatic);
  profile.hw = fit.hardware;
  calib::set_expected_errors(profile.hw, fit);
  profile.hw.origin(model::StackKind::hf_peft).source = "lorasim calibrate --stack hf-peft, " + utc_timestamp();
  profile.calibration.set("hf_peft_date", utc_timestamp());
  profile.calibration.set("hf_peft_runs", static_cast<int64_t>(rows.size()));
  profile.calibration.set("hf_peft_duration_s", duration_s);
  profile.calibration.set("hf_peft_reference_model", opt.reference.arch.name);
  profile.calibration.set("hf_peft_time_rms_rel", fit.time_rms_rel);
  profile.calibration.set("hf_peft_reserved_rms_rel", fit.reserved_rms_rel);
  hw::write_profile_file(profile, out);
  if (!save.empty()) calib::write_measurements_csv(rows, save);

  std::cout << "\nfit residuals over " << fit.time_points << " runs (predicted vs measured):\n";
  print_residuals(std::cout, fit.residuals);
  std::cout << "\nthe rows moved:\n";
  for (const auto& m : fit.moved) std::cout << "  " << m.name << " " << m.before << " -> " << m.after << "\n";
  std::cout << "\nstep time: rms " << fixed(100 * fit.time_rms_rel, 1) << "%, max " << fixed(100 * fit.time_max_rel, 1)
            << "%";
  if (fit.memory_points > 0)
    std::cout << "; peak reserved: rms " << fixed(100 * fit.reserved_rms_rel, 1) << "%, max "
              << fixed(100 * fit.reserved_max_rel, 1) << "%";
  std::cout << "\ncalibration took " << fixed(duration_s, 1) << " s (" << rows.size() << " runs)\nwrote " << out
            << "\n";
  return kOk;
}

}  // namespace lorasim::cli
