// `lorasim calibrate`: real training steps on this machine's device, a fitted cost model,
// and a hardware profile written atomically.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <sstream>

#include "calibrate/calibration.h"
#include "calibrate/convert.h"
#include "calibrate/measurement_io.h"
#include "calibrate/precision.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/device_profile.h"
#include "cli/fit_record.h"
#include "cli/format.h"
#include "cli/memory_limit.h"
#include "cli/output_path.h"
#include "model/error.h"
#include "hwprofiles/match.h"
#include "hwprofiles/profile.h"
#include "model/architecture.h"
#include "model/training_stack.h"

namespace lorasim::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) { g_interrupted = true; }

// SIGINT/SIGTERM set a flag the calibration polls between micro-batches, so it can stop cleanly
// and write nothing; the default handlers come back however the calibration ends.
struct InterruptGuard {
  InterruptGuard() {
    g_interrupted = false;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
  }
  ~InterruptGuard() {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
};

std::vector<int64_t> parse_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_int(flag, item, 1));
  if (out.empty()) throw InputError(flag + " needs a comma-separated list of positive numbers");
  return out;
}

// Runs `f`, naming `flag` in the library's error: the library names the concept, the
// command line knows which flag set it.
template <class F>
void with_flag(const std::string& flag, F f) {
  try {
    f();
  } catch (const InputError& e) {
    throw InputError(flag + ": " + e.what());
  }
}

}  // namespace

int cmd_calibrate(const Args& args) {
  if (calibrates_interconnect(args)) return cmd_calibrate_interconnect(args);
  if (calibrates_hf_stack(args)) return cmd_calibrate_hf(args);
  const calib::CalibrationOptions defaults;
  std::string save, device = "auto", out, model, depths, seqs, precision = "bf16";
  std::string wide_model = defaults.wide_model, narrow_model = defaults.narrow_model;
  int64_t max_tokens = defaults.max_tokens, steps = defaults.measure_steps, lora_rank = model::LoraSpec{}.rank;
  int64_t deep_depth = defaults.deep_depth;
  double budget = defaults.time_budget_s;
  MemoryLimitArgs memory;
  OptionTable t;
  t.path("out", out, "profile to write (TOML, named .toml); required")
      .path("save-measurements", save, "also write every measured run to this .csv (refit later with `lorasim fit`)")
      .text("device", device, "auto, cpu, cuda or cuda:N")
      .quantity("device")
      .text("model", model, "reference model preset (default: qwen3-1.7b on CUDA, tiny on the CPU)")
      .quantity("model", "(see `lorasim models`)")
      .real("budget", budget, 1, 86400, "time budget in seconds, model construction included")
      .text("depths", depths, "truncated depths to run, e.g. 1,3 (default 1,3 on CUDA, 1,2 on the CPU)")
      .quantity("depths")
      .text("seq-lens", seqs, "sequence lengths, e.g. 256,1024,4096 (default; 32,128 on the CPU)")
      .integer("deep-depth", deep_depth, -1, "a deeper model timed whole, for the overlap of host and device (-1: half the reference depth on CUDA, none on the CPU; 0: none)")
      .quantity("deep_depth")
      .text("wide-model", wide_model, "a wider preset run at the shallow depths, so GEMM and memory-bound time separate across model widths (auto: qwen3-8b on CUDA, none on the CPU; none; or a preset)")
      .text("narrow-model", narrow_model, "a narrower preset run the same way, for widths below the reference's (auto: qwen2.5-0.5b on CUDA, none on the CPU; none; or a preset)")
      .integer("max-tokens", max_tokens, 0, "largest micro-batch in tokens (0: 16384 on CUDA, 1024 on the CPU)")
      .integer("steps", steps, 1, "timed optimizer steps per run (median)")
      .integer("lora-rank", lora_rank, 1, "LoRA rank of the reference runs")
      .quantity("lora_rank")
      .text("precision", precision, "CUDA weights precision: bf16 or fp16 (the CPU runs fp32)")
      .quantity("precision");
  add_memory_limit_options(t, memory, "cap device memory, e.g. 40GiB (runs above it are recorded as out of memory)");
  StackArgs stack_args;
  stack_args.stack = "lorasim";
  add_stack_options(t, stack_args);
  if (!t.parse(args)) {
    std::cout << "usage: lorasim calibrate --out FILE [options]\n\n"
                 "Runs short real LoRA training steps of a reference model truncated to a few depths\n"
                 "(and, on CUDA, of a wider and a narrower model, so that other widths are\n"
                 "predicted too), over micro-batch sizes and sequence lengths, fits the cost\n"
                 "model and writes a hardware profile. Calibrate once per GPU; then simulate any\n"
                 "workload with --profile FILE. This calibrates the GPU through lorasim's own\n"
                 "LibTorch runner; `lorasim calibrate --stack hf-peft --help` calibrates the\n"
                 "Transformers + PEFT stack you train with on top of such a profile, and\n"
                 "`lorasim calibrate --interconnect --help` times the link between GPUs for --gpus N.\n\n"
                 "examples:\n"
                 "  lorasim calibrate --device cuda --out my-h200.toml          # about 90 s\n"
                 "  lorasim calibrate --device cpu --model tiny --out cpu.toml\n\n"
              << t.description() << "\n";
    return kOk;
  }
  if (out.empty()) throw InputError("--out FILE is required: where to write the profile");
  check_outputs({{"--out", out, ".toml"}, {"--save-measurements", save, ".csv"}});
  const model::StackSpec stack = build_stack(stack_args);
  if (model::training_stack(stack.kind).calibration() != model::StackCalibration::runner)
    throw InputError("--stack " + std::string(model::stack_name(stack.kind)) +
                     ": this lorasim calibrates only its own LibTorch runner (--stack lorasim)");
  if (stack.allocator != model::StackSpec::lorasim_runner().allocator)
    throw InputError("--allocator default: lorasim's runner runs with expandable segments (--allocator expandable)");

  calib::CalibrationOptions opt;
  opt.device = device;
  const calib::DeviceInfo dev = calib::resolve_device(device);
  opt.device = dev.spec;
  opt.reference.arch = model::preset(model.empty() ? (dev.is_cuda ? "qwen3-1.7b" : "tiny") : model);
  opt.reference.lora.rank = lora_rank;
  opt.reference.train.precision = calib::resolve_precision(precision, dev).precision;
  opt.reference.validate();
  if (!depths.empty()) opt.depths = parse_list("--depths", depths);
  if (!seqs.empty()) opt.seq_lens = parse_list("--seq-lens", seqs);
  opt.max_tokens = max_tokens;
  opt.deep_depth = deep_depth;
  opt.wide_model = wide_model;
  opt.narrow_model = narrow_model;
  // An unknown preset fails here, before any training.
  with_flag("--wide-model", [&] { calib::wide_model_name(opt, dev.is_cuda); });
  with_flag("--narrow-model", [&] { calib::narrow_model_name(opt, dev.is_cuda); });
  opt.time_budget_s = budget;
  opt.measure_steps = static_cast<int>(steps);
  opt.memory_limit_bytes = checked_memory_limit(memory, dev.total_memory_bytes, dev.name);
  calib::default_plan(opt, dev.is_cuda);  // its checks (depths beyond the model, ...) before any training

  hw::Profile profile = hw::base_profile_for(identity_of(dev));
  std::cerr << "calibrating " << dev.name << " (" << dev.spec << ") with " << opt.reference.arch.name
            << ", budget " << opt.time_budget_s << " s\n";
  std::optional<InterruptGuard> interrupts(std::in_place);
  const calib::CalibrationResult res = calib::run_calibration(
      opt, profile.hw,
      [](const calib::CalibrationProgress& p) {
        std::cerr << "[" << (p.done < 10 ? " " : "") << p.done << "/" << p.total << "] " << p.label << ": ";
        if (p.skipped) std::cerr << "skipped";
        else if (p.result->oom) std::cerr << "out of memory";
        else
        {
          std::cerr << "step " << human_seconds(p.result->step_time_s) << ", micro-batch "
                    << human_seconds(p.result->micro_batch_time_s);
          if (calib::measured(p.result->host_time_s))
            std::cerr << " (host " << human_seconds(p.result->host_time_s) << ", device "
                      << human_seconds(p.result->device_time_s) << ")";
          std::cerr << ", peak " << human_bytes(p.result->peak_reserved_bytes) << " reserved";
        }
        std::cerr << "  (" << fixed(p.elapsed_s, 1) << " s)\n";
      },
      [] { return g_interrupted.load(); });
  interrupts.reset();

  const std::string base = profile.source_text_name;
  std::string plan;
  for (const auto& p : res.plan) plan += (plan.empty() ? "" : "; ") + p.label();
  const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");  // set by the runner unless the user did
  FitRecord record{"lorasim calibrate", base, "", {}};
  record.facts = {{"date", utc_timestamp()},
                  {"device", dev.name},
                  {"device_spec", dev.spec},
                  {"driver_version", dev.driver_version},
                  {"cuda_version", dev.cuda_version},
                  {"torch_version", dev.torch_version},
                  {"reference_model", opt.reference.arch.name},
                  {"precision", std::string(model::precision_name(opt.reference.train.precision))}};
  if (dev.is_cuda) record.facts.push_back({"cuda_alloc_conf", std::string(conf ? conf : "")});
  record.facts.insert(record.facts.end(), {{"plan", plan},
                                           {"runs", static_cast<int64_t>(res.measurements.size())},
                                           {"runs_skipped", static_cast<int64_t>(res.skipped)},
                                           {"duration_s", res.duration_s},
                                           {"reserved_max_rel", res.fit.reserved_max_rel}});
  record_fit(profile, res.fit, record);
  profile.hw.calibrated = true;
  profile.hw.coefficients_precision = opt.reference.train.precision;
  hw::write_profile_file(profile, out);
  if (!save.empty()) {
    std::vector<calib::Measurement> rows = res.measurements;
    calib::set_device(rows, dev.name, dev.is_cuda, static_cast<double>(dev.total_memory_bytes));
    calib::write_measurements_csv(rows, save);
  }

  std::cout << "\n";
  print_fit(std::cout, res.fit, base);
  std::cout << "calibration took " << fixed(res.duration_s, 1) << " s (" << res.measurements.size()
            << " runs, " << res.skipped << " skipped)\nwrote " << out << "\n";
  if (const std::string why = calib::residual_warning(res.fit, !dev.is_cuda, opt.measure_steps); !why.empty())
    std::cerr << "warning: " << why << "\n";
  return kOk;
}

}  // namespace lorasim::cli
