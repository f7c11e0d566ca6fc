// Command-line helpers shared by the subcommands: value parsing with errors that name the
// flag, and the option groups every workload-taking command accepts.
#pragma once
#include <boost/optional.hpp>
#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

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
/// --stack, --attn-impl, --lora-dropout, --allocator, --autocast.
void add_stack_options(po::options_description& desc, StackArgs& args);
/// Parses and validates the stack; an option the stack does not have is refused naming its flag.
model::StackSpec build_stack(const StackArgs& args);
/// Refuses a stack other than lorasim's own runner for a command that runs training steps
/// itself (`command`: "validate", "train"); the hf-peft path is the python package's callback.
void require_runner_stack(const model::StackSpec& stack, const std::string& command);

/// Raw text of the workload options; parsed after Boost so errors name the flag and the rule.
struct WorkloadArgs {
  std::string model = "qwen3-1.7b";  ///< preset name
  std::string model_config;          ///< path to a Hugging Face config.json (overrides --model)
  std::string seq_len = "512";       ///< tokens per sequence
  std::string lora_rank = "16";
  std::string lora_alpha = "32";
  std::string lora_targets = "all";
  std::string precision = "auto";    ///< auto: bf16 where the device supports it, else fp16
  bool grad_ckpt = false;
  StackArgs stack;
};
void add_workload_options(po::options_description& desc, WorkloadArgs& args);
/// Adds the workload's and the stack's options (add_stack_options).
/// Builds and validates the workload; `bf16_supported` resolves precision "auto".
model::Workload build_workload(const WorkloadArgs& args, bool bf16_supported);

/// Integer flag value >= min; InputError "--flag must be ... got 'x'" otherwise.
int64_t parse_int(const std::string& flag, const std::string& text, int64_t min);
/// Real flag value in [lo, hi].
double parse_real(const std::string& flag, const std::string& text, double lo, double hi);
/// "24GiB", "24G", "500MiB", "2TiB", "1.5e9" -> bytes.
int64_t parse_bytes(const std::string& flag, const std::string& text);

/// Output formats of commands that print results.
enum class Format { table, csv, json };
Format parse_format(const std::string& text);

/// Parses `args` against `desc`; throws po::error on unknown flags and on any bare word (no
/// command takes positional arguments).
po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc);

}  // namespace lorasim::cli
