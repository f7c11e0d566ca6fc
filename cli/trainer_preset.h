// --trainer: the hf-peft options as the three programs people train with set them when not told
// otherwise (TRL's SFTTrainer, Transformers' Trainer, a plain PyTorch loop). A preset only fills
// what the command line leaves unset, so an explicit flag always wins.
#pragma once
#include <cstdint>
#include <string>

#include "cli/args.h"

namespace lorasim::cli {

struct TrainerPreset {
  const char* name;
  const char* stack;          ///< the training stack it runs on (--stack it implies)
  const char* autocast;       ///< --autocast it implies
  const char* fused_lm_head;  ///< --fused-lm-head it implies
  bool grad_ckpt;             ///< checkpointing on where the command's default is a fixed value
  int64_t max_length_tokens;  ///< --max-length it implies with --lengths; 0: the file's longest
  /// On a quantized base: the --kbit-prepare and --adapter-dtype it implies (nullptr: PEFT's
  /// defaults, prepared and fp32 adapters).
  const char* quantized_kbit_prepare;
  const char* quantized_adapter_dtype;
};

/// --trainer (simulate and recommend: the commands that predict a program's run; validate and
/// train take the stack from the rows or run lorasim's own), into `args.trainer`.
void add_trainer_option(OptionTable& table, WorkloadArgs& args);

/// The preset of that name; InputError naming --trainer and the names otherwise.
const TrainerPreset& trainer_preset(const std::string& name);

/// `args` with the --trainer preset's stack and its options where they are unset; refuses a preset
/// on another stack given explicitly (InputError naming --trainer). Without --trainer, `args` unchanged.
WorkloadArgs with_trainer_preset(WorkloadArgs args);

/// The --max-length a preset implies with --lengths (0: none, the file's longest).
int64_t trainer_max_length_tokens(const WorkloadArgs& args);

}  // namespace lorasim::cli
