// `lorasim calibrate --stack hf-peft` (or lightning): short real Transformers + PEFT training runs
// through the Python probe -- the step a Trainer runs, or a Lightning Trainer's --, the stack's
// terms fitted on a GPU profile, and the profile written with its [stack.NAME] table. Needs no
// LibTorch: both binaries run it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "calibrate/convert.h"
#include "calibrate/fit.h"
#include "calibrate/hf_plan.h"
#include "calibrate/hf_probe.h"
#include "calibrate/measurement_io.h"
#include "cli/args.h"
#include <algorithm>

#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/fit_record.h"
#include "cli/format.h"
#include "cli/hardware_args.h"
#include "cli/output_path.h"
#include "hwprofiles/match.h"
#include "hwprofiles/profile.h"
#include "model/architecture.h"
#include "model/error.h"
#include "model/stack.h"
#include "model/training_stack.h"

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

// This machine's CPU as the probe's rows name it (device "cpu", the RAM as its memory): a profile
// calibrated on the CPU describes the CPU, whatever GPU profile lent it its priors.
hw::DeviceIdentity this_cpu() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name = "CPU";
  while (std::getline(cpuinfo, line))
    if (const size_t v = line.find_first_not_of(" \t", line.find(':') + 1);
        line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos && v != std::string::npos) {
      name = line.substr(v);
      break;
    }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_bytes = ::sysconf(_SC_PAGE_SIZE);
  return {name, false, pages > 0 && page_bytes > 0 ? static_cast<int64_t>(pages) * page_bytes : 0};
}

// The profile the stack's terms are fitted on: --gpu/--profile on CUDA (required: it sizes the
// plan); on the CPU the CPU's own (a --profile of this CPU, e.g. from `lorasim fit`, may refine it).
hw::Profile base_profile(const HardwareArgs& ha, bool is_cuda) {
  if (is_cuda) {
    if (ha.gpu.empty() && ha.profile.empty())
      throw InputError("--gpu NAME or --profile FILE is required on CUDA: the GPU's profile, whose device terms the "
                       "stack's terms are fitted on (see `lorasim profiles`)");
    return select_profile(ha);
  }
  const hw::DeviceIdentity cpu = this_cpu();
  if (ha.gpu.empty() && ha.profile.empty()) return hw::base_profile_for(cpu);
  hw::Profile given = select_profile(ha);
  if (!hw::same_device_model(given, cpu))
    throw InputError("--device cpu trains on the CPU, but " +
                     (ha.profile.empty() ? "--gpu " + ha.gpu : "--profile " + ha.profile) + " describes the " +
                     given.hw.display_name + ": leave --gpu/--profile out (the profile written is the CPU's own)");
  return given;
}

// The [calibration] keys' prefix of a stack's record: "hf_peft_".
std::string calibration_prefix(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name + "_";
}

}  // namespace

std::string calibrate_stack_flag(const Args& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--stack" && i + 1 < args.size()) return args[i + 1];
    if (a.rfind("--stack=", 0) == 0) return a.substr(8);
  }
  return "";
}

bool calibrates_hf_stack(const Args& args) {
  try {
    const std::string value = calibrate_stack_flag(args);
    return !value.empty() &&
           model::training_stack(model::parse_stack(value)).calibration() == model::StackCalibration::hf_probe;
  } catch (const InputError&) {
    return false;  // the calibrate command's own parsing reports the bad value
  }
}

int cmd_calibrate_hf(const Args& args) {
  std::string out, save, device = "cuda", model, python, precision = "bf16", quant = "none", double_quant = "true";
  const calib::HfPlanOptions defaults;
  int64_t steps = defaults.measure_steps, warmup = defaults.warmup_steps;
  bool dry_run = false;
  HardwareArgs ha;
  ha.gpu.clear();
  StackArgs sa;
  sa.stack = "hf-peft";
  OptionTable t;
  t.path("out", out, "profile to write (TOML, named .toml): the GPU profile with the stack's [stack.NAME] terms; required");
  add_hardware_options(t, ha);
  t.text("device", device, "where the probe trains: cuda, cuda:N or cpu")
      .quantity("device")
      .path("python", python, "the Python with torch, transformers and peft (default: $LORASIM_PYTHON, else python3)")
      .quantity("python")
      .text("model", model, "reference model preset (default: qwen3-1.7b on CUDA, tiny on the CPU)")
      .quantity("model", "(see `lorasim models`)")
      .text("precision", precision, "weights precision on CUDA: bf16 or fp16 (the CPU runs fp32)")
      .integer("steps", steps, 1, "timed optimizer steps per run (median)")
      .integer("warmup", warmup, 0, "optimizer steps before timing")
      .choice("quant", quant, {"none", "nf4", "fp4", "int8"},
              "also calibrate a base stored by bitsandbytes (QLoRA): runs reloaded 4-bit or 8-bit and prepared by "
              "PEFT fit its dequantization and host cost per quantized projection; needs CUDA and bitsandbytes")
      .choice("double-quant", double_quant, {"true", "false"},
              "with --quant nf4 or fp4: the quantized runs' bnb_4bit_use_double_quant")
      .path("save-measurements", save, "also write every measured run to this .csv (refit later with `lorasim fit`)")
      .toggle("dry-run", dry_run, "print the plan's runs, sized for the GPU, and exit without running them");
  add_stack_options(t, sa);
  if (!t.parse(args)) {
    std::cout << "usage: lorasim calibrate --stack hf-peft|lightning --out FILE (--gpu NAME | --profile FILE | --device cpu) [options]\n\n"
                 "Calibrates the stack most people train with: runs short real Hugging Face\n"
                 "Transformers + PEFT training steps (the step Trainer runs) of a reference model\n"
                 "at several depths (one layer to full), and of a narrower one, through lorasim's\n"
                 "Python probe (python/lorasim_hf) in your own Python, then fits the stack's host,\n"
                 "device and memory terms on the GPU's profile and writes it. Runs on a long-tailed\n"
                 "lengths distribution fit what new shapes cost and what your allocator holds under\n"
                 "varying shapes; runs through TRL's fused LM head (skipped without trl) fit its\n"
                 "time per token. About a minute and a half on an H200; on a smaller GPU the runs\n"
                 "shrink to what its memory holds.\n"
                 "--attn-impl, --lora-dropout, --autocast and --allocator describe how you train;\n"
                 "the plan also varies each of them once. --quant nf4 adds runs on a 4-bit base\n"
                 "(bitsandbytes, prepare_model_for_kbit_training) for its dequantization time.\n"
                 "--stack lightning runs the same model under a PyTorch Lightning Trainer (needs\n"
                 "lightning or pytorch-lightning): a dozen runs fit its loop's host terms, the\n"
                 "rest it reads from the profile's hf-peft terms (calibrate those first).\n\n"
                 "examples:\n"
                 "  lorasim calibrate --stack hf-peft --gpu h200 --out h200-hf.toml\n"
                 "  lorasim calibrate --stack hf-peft --gpu t4 --dry-run\n"
                 "  lorasim calibrate --stack hf-peft --gpu l4 --quant nf4 --out l4-qlora.toml\n"
                 "  lorasim calibrate --stack hf-peft --profile my-a100.toml --python ~/venv/bin/python --out a100-hf.toml\n"
                 "  lorasim calibrate --stack hf-peft --device cpu --out cpu-hf.toml   # the CPU's own profile\n"
                 "  lorasim calibrate --stack lightning --profile h100-hf.toml --out h100-pl.toml\n\n"
              << t.description() << "\n";
    return kOk;
  }
  if (out.empty() && !dry_run) throw InputError("--out FILE is required: where to write the profile");
  const bool is_cuda = device.rfind("cuda", 0) == 0;
  if (!is_cuda && device != "cpu") throw InputError("--device must be cuda, cuda:N or cpu, got " + quoted_excerpt(device));
  if (!dry_run)
    check_outputs({{"--out", out, ".toml"}, {"--save-measurements", save, ".csv"}}, {{"--profile", ha.profile, ""}});
  hw::Profile profile = base_profile(ha, is_cuda);

  calib::HfPlanOptions opt;
  opt.is_cuda = is_cuda;
  opt.reference.arch = model::preset(model.empty() ? (is_cuda ? "qwen3-1.7b" : "tiny") : model);
  opt.reference.stack = build_stack(sa);
  const model::TrainingStack& stack = model::training_stack(opt.reference.stack.kind);
  if (stack.calibration() != model::StackCalibration::hf_probe)
    throw InputError("--stack: this path calibrates hf-peft or lightning; `lorasim calibrate` without --stack calibrates "
                     "lorasim's runner");
  const std::string name = stack.name();
  if (stack.base_stack() && quant != "none")
    throw InputError("--quant: the " + name + " stack reads a quantized base's terms from " + stack.base_stack() +
                     "'s; calibrate them with --stack " + stack.base_stack() + " --quant " + quant);
  opt.reference.train.precision = is_cuda ? model::parse_precision(precision) : model::Precision::fp32;
  if (quant != "none") {
    opt.reference.train.weight_format = model::parse_weight_format(quant);
    opt.reference.train.double_quant = double_quant == "true";
    // The plan's quantized runs are prepared (and checkpointed) by the plan; its float runs are not.
    opt.reference.train.kbit_prepare = false;
  } else if (double_quant != "true") {
    throw InputError("--double-quant applies to a 4-bit base: add --quant nf4 or fp4");
  }
  if (!is_cuda) opt.reference.stack.autocast = false;  // the CPU trains in fp32
  opt.reference.validate();
  opt.measure_steps = static_cast<int>(steps);
  opt.warmup_steps = static_cast<int>(warmup);
  if (is_cuda) {
    // Runs sized for an H200 shrink to what the profile's GPU holds.
    opt.hardware = profile.hw;
    opt.memory_limit_bytes = static_cast<double>(profile.hw.memory_bytes);
  }

  const std::vector<calib::HfPlannedRun> plan =
      stack.base_stack() ? calib::default_loop_plan(opt) : calib::default_hf_plan(opt);
  if (const char* base_name = stack.base_stack()) {
    const model::TrainingStack* base_stack = model::find_stack(base_name);
    if (base_stack && !profile.hw.origin(base_stack->kind()).calibrated)
      std::cerr << "warning: the profile's " << base_name << " terms (" << profile.hw.name << ") are priors; the "
                << name << " stack reads its device time and memory from them, so its fit will carry their error "
                << "(run `lorasim calibrate --stack " << base_name << "` first and pass its profile with --profile)\n";
  }
  if (dry_run) {
    std::cout << plan.size() << " runs of the " << name << " stack on " << device << ", sized for the "
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
  std::cerr << "calibrating the " << name << " stack on " << device << " with " << opt.reference.arch.name << " ("
            << plan.size() << " runs, python: " << popt.python << ")\n";
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> skipped;
  const std::vector<calib::Measurement> rows = calib::run_probe(plan, popt, {}, &skipped);
  for (const std::string& why : skipped)
    std::cerr << "warning: skipped " << why << "; the profile keeps its fused_head_s_per_token\n";
  const double duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::string base = profile.source_text_name;
  const calib::FitReport fit = calib::fit_profile(rows, profile.hw, calib::FitMode::automatic);
  const std::string date = utc_timestamp();
  // The stack's lines go beside the GPU's record, which describes the GPU half kept.
  record_fit(profile, fit,
             {"lorasim calibrate --stack " + name + ", " + date, base, calibration_prefix(name),
              {{"date", date}, {"device", rows.empty() ? device : rows.front().device},
               {"runs", static_cast<int64_t>(rows.size())}, {"duration_s", duration_s},
               {"reference_model", opt.reference.arch.name}}});
  hw::write_profile_file(profile, out);
  if (!save.empty()) calib::write_measurements_csv(rows, save);

  std::cout << "\n";
  print_fit(std::cout, fit, base);
  std::cout << "calibration took " << fixed(duration_s, 1) << " s (" << rows.size() << " runs)\nwrote " << out
            << "\n";
  if (const std::string why = calib::residual_warning(fit, !is_cuda, steps); !why.empty())
    std::cerr << "warning: " << why << "\n";
  return kOk;
}

}  // namespace lorasim::cli
