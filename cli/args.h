// Command-line helpers shared by the subcommands: value parsing with errors that name the
// flag, and the option groups every workload-taking command accepts.
#pragma once
#include <boost/optional.hpp>
#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/option_table.h"
#include "model/workload.h"

namespace lorasim::cli {

namespace po = boost::program_options;

/// Exit codes: distinct per error class so scripts can tell them apart.
enum ExitCode { kOk = 0, kInternal = 1, kUsage = 2, kConfig = 3, kCalibration = 4 };

/// Raw text of the training-stack options (model/stack.h). Empty options take the stack's own
/// defaults, so `--stack lorasim` alone is the LibTorch runner as it runs.
/// An option not given is unset rather than empty, so that `--allocator ''` is refused.
struct StackArgs {
  std::string stack = "hf-peft";             ///< hf-peft or lorasim; a command may set its own default first
  boost::optional<std::string> attn_impl;    ///< sdpa, eager, flash_attention_2
  boost::optional<std::string> lora_dropout; ///< PEFT's lora_dropout, [0, 1)
  boost::optional<std::string> allocator;    ///< default or expandable
  boost::optional<std::string> autocast;     ///< true or false
  boost::optional<std::string> fused_lm_head;  ///< true or false
};
/// --stack, --attn-impl, --lora-dropout, --allocator, --autocast, --fused-lm-head.
void add_stack_options(OptionTable& table, StackArgs& args);
/// Parses and validates the stack; an option the stack does not have is refused naming its flag.
model::StackSpec build_stack(const StackArgs& args);
/// Refuses a stack other than lorasim's own runner for a command that runs training steps
/// itself (`command`: "validate", "train"); the hf-peft path is the python package's callback.
void require_runner_stack(const model::StackSpec& stack, const std::string& command);

/// The workload options. The numbers are typed, and their defaults are the model's own
/// (model/workload.h, model/lora.h): declared there once, printed by --help from here.
struct WorkloadArgs {
  std::string model = "qwen3-1.7b";                       ///< preset name
  std::string model_config;                               ///< a Hugging Face config.json (overrides --model)
  std::string model_config_text;  ///< its text, read once when the flag is parsed: a pipe (<(...)) reads only once
  int64_t seq_len = model::TrainingSpec{}.seq_len;        ///< tokens per sequence
  int64_t lora_rank = model::LoraSpec{}.rank;
  double lora_alpha = model::LoraSpec{}.alpha;
  std::string lora_targets = "all";
  std::string precision = "auto";  ///< auto: bf16 where the device supports it, else fp16
  boost::optional<std::string> grad_ckpt;   ///< --grad-ckpt auto, true or false; unset: see grad_ckpt_mode
  std::string grad_ckpt_default = "false";  ///< a command sets its own before declaring (recommend: auto)
  boost::optional<std::string> trainer;     ///< --trainer sft, trainer or loop where the command has it (cli/trainer_preset.h)
  // A quantized base (bitsandbytes, hf-peft only): cli/quant_args.h.
  boost::optional<std::string> quant;         ///< none, nf4, fp4, int8; unset: the config's, else none
  boost::optional<std::string> double_quant;  ///< bnb_4bit_use_double_quant; unset: the config's, else true
  boost::optional<std::string> kbit_prepare;  ///< prepare_model_for_kbit_training; unset: true when quantized
  std::string optim = model::optimizer_name(model::kDefaultOptimizer);  ///< TrainingArguments(optim=...)
  boost::optional<std::string> adapter_dtype; ///< fp32 or compute; unset: fp32, or --trainer sft's preset
  StackArgs stack;
};
/// The workload's options and the stack's (add_stack_options).
void add_workload_options(OptionTable& table, WorkloadArgs& args);
/// Gradient checkpointing off, on, or both weighed (`--grad-ckpt auto`).
enum class GradCkpt { off, on, both };
/// What the command line asks for: --grad-ckpt where given; else the --trainer preset's where
/// the command's default is a fixed value (auto already weighs the preset's); else the default.
GradCkpt grad_ckpt_mode(const WorkloadArgs& args);
/// The text of --model-config (read when parsed; read now where a command set only the path).
std::string model_config_text(const WorkloadArgs& args);
/// Builds and validates the workload, --trainer's preset under the flags given; `bf16_supported`
/// resolves precision "auto". Refuses `--grad-ckpt auto` (InputError naming the flag): a command
/// that weighs both builds one workload per setting (with_grad_ckpt).
model::Workload build_workload(const WorkloadArgs& args, bool bf16_supported);
/// `args` with --grad-ckpt set to `on`.
WorkloadArgs with_grad_ckpt(WorkloadArgs args, bool on);

/// Integer flag value >= min; InputError "--flag must be ... got 'x'" otherwise.
int64_t parse_int(const std::string& flag, const std::string& text, int64_t min);
/// Real flag value in [lo, hi].
double parse_real(const std::string& flag, const std::string& text, double lo, double hi);
/// "24GiB", "24G", "500MiB", "2TiB", "1.5e9" -> bytes.
int64_t parse_bytes(const std::string& flag, const std::string& text);

/// Output formats of commands that print results.
enum class Format { table, csv, json };
Format parse_format(const std::string& text);

}  // namespace lorasim::cli
