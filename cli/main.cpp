// lorasim's entry point: picks the subcommand from a table and maps errors to exit codes.
// Everything else lives in the libraries; this folder only parses arguments.
#include <fcntl.h>

#include <boost/program_options/errors.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/forward.h"
#include "cli/option_table.h"
#include "cli/version.h"
#include "model/error.h"

namespace {

using lorasim::cli::Args;

struct Command {
  const char* name;
  int (*run)(const Args&);
  const char* summary;
};

const Command kCommands[] = {
    {"simulate", lorasim::cli::cmd_simulate, "predict time and memory of every split of an effective batch"},
    {"recommend", lorasim::cli::cmd_recommend, "print the fastest split that fits, as HF TrainingArguments flags"},
    {"profiles", lorasim::cli::cmd_profiles, "list the embedded GPU profiles (calibrated or prior)"},
    {"models", lorasim::cli::cmd_models, "list the built-in architecture presets"},
#ifdef LORASIM_WITH_CALIBRATE
    {"calibrate", lorasim::cli::cmd_calibrate, "run short real training steps and fit a hardware profile"},
    {"train", lorasim::cli::cmd_train, "run real LoRA training steps and report time and memory"},
#else
    {"calibrate",
     [](const Args& a) -> int {
       // The hf-peft stack is calibrated by its Python probe: no LibTorch, no hand-over.
       if (lorasim::cli::calibrates_interconnect(a)) return lorasim::cli::cmd_calibrate_interconnect(a);
       if (lorasim::cli::calibrates_hf_stack(a)) return lorasim::cli::cmd_calibrate_hf(a);
       // A pip install has no LibTorch runner: calibrate what it can run, and say so.
       if (lorasim::cli::calibrate_stack_flag(a).empty() && !lorasim::cli::has_train_binary()) {
         std::cerr << "note: this lorasim has no lorasim-train (lorasim's LibTorch runner): calibrating the hf-peft "
                      "stack, your Transformers + PEFT (--stack hf-peft)\n";
         return lorasim::cli::cmd_calibrate_hf(a);
       }
       lorasim::cli::exec_train_binary("calibrate", a, "calibrate your Transformers + PEFT with --stack hf-peft");
     },
     "run short real training steps and fit a hardware profile"},
    {"train",
     [](const Args& a) -> int {
       lorasim::cli::exec_train_binary("train", a,
                                       "time your own Trainer's steps with lorasim_hf's LorasimCallback instead");
     },
     "run real LoRA training steps and report time and memory"},
#endif
    {"validate", lorasim::cli::cmd_validate, "compare predictions with measured runs (live, or from a file)"},
    {"fit", lorasim::cli::cmd_fit, "fit a profile to timed runs of any framework (a measurement file)"},
};

void usage(std::ostream& out) {
  out << "usage: lorasim <command> [options]   (lorasim <command> --help for its options)\n\n"
         "lorasim predicts step time and peak memory of LoRA fine-tuning for every split of an\n"
         "effective batch into micro-batch x gradient accumulation, and recommends the fastest\n"
         "split that fits on the GPU -- for the program you train with: Hugging Face Trainer /\n"
         "TRL SFTTrainer + PEFT (--stack hf-peft, the default), PyTorch Lightning over the same\n"
         "PEFT model (--trainer lightning) or lorasim's LibTorch runner.\n\ncommands:\n";
  for (const auto& c : kCommands) {
    std::string n = c.name;
    out << "  " << n << std::string(12 - n.size(), ' ') << c.summary << "\n";
  }
  out << "\nexamples:\n"
         "  lorasim recommend --gpu t4 --model qwen3-1.7b --effective-batch 4 --seq-len 512\n"
         "  lorasim simulate --gpu h200 --model qwen3-8b --effective-batch 64 --seq-len 2048 --grad-ckpt\n"
         "  lorasim simulate --gpu h200 --model qwen3-1.7b --effective-batch 16 --fused-lm-head true   # TRL SFTTrainer\n"
         "  lorasim calibrate --stack hf-peft --gpu h200 --out h200-hf.toml   # your Transformers + PEFT\n"
         "  lorasim profiles\n";
}

// What a command printed must have reached stdout: a full disk, a closed descriptor or a
// reader gone away is an error, not a success with the output lost.
int flushed(int code) {
  errno = 0;
  std::cout.flush();
  if (std::cout) return code;
  std::cerr << "error: cannot write to stdout: " << (errno ? std::strerror(errno) : "write failed") << "\n";
  return code == lorasim::cli::kOk ? lorasim::cli::kInternal : code;
}

int run(const std::vector<std::string>& args);

// Every error line goes out through here: a message is one line of bounded length, whatever
// input it quotes (the libraries quote an excerpt; this catches what a third party's message
// -- Boost's, a parser's -- holds whole), and no control byte reaches the terminal.
void print_error(const std::string& message) { std::cerr << "error: " << lorasim::excerpt(message, 4096) << "\n"; }

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout would pass descriptor 1 to the next file opened (a profile being written),
  // and the report would land in it.
  if (::fcntl(1, F_GETFD) == -1 && errno == EBADF) {
    std::cerr << "error: cannot write to stdout: it is closed (redirect it to a file or /dev/null instead)\n";
    return lorasim::cli::kInternal;
  }
  return flushed(run(std::vector<std::string>(argv + 1, argv + argc)));
}

namespace {

int run(const std::vector<std::string>& args) {
  using namespace lorasim::cli;
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? kUsage : kOk;
  }
  if (args[0] == "--version") {
    std::cout << version_text();
    return kOk;
  }
  const std::string name = args[0];
  const Args rest(args.begin() + 1, args.end());
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    try {
      // "-h" is accepted everywhere although only long options are parsed.
      for (const auto& a : rest)
        if (a == "-h") return c.run({"--help"});
      return c.run(rest);
    } catch (const boost::program_options::error& e) {
      print_error(std::string(e.what()) + " (see `lorasim " + name + " --help`)");
      return kUsage;
    } catch (const lorasim::InputError& e) {
      print_error(describe_error(e));
      return kUsage;
    } catch (const lorasim::ConfigError& e) {
      print_error(describe_error(e));
      return kConfig;
    } catch (const lorasim::CalibrationError& e) {
      print_error(describe_error(e));
      return kCalibration;
    } catch (const std::exception& e) {
      print_error(e.what());
      return kInternal;
    }
  }
  std::vector<std::string> names;
  for (const auto& c : kCommands) names.push_back(c.name);
  std::string msg = "unknown command " + lorasim::quoted_excerpt(name);
  const std::string near = lorasim::nearest_name(name, names);
  if (!near.empty()) msg += ", did you mean '" + near + "'?";
  print_error(msg + " (see `lorasim --help`)");
  return kUsage;
}

}  // namespace
