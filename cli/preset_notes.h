// Notes on what simulate and recommend took from a default or a --trainer preset rather than the
// command line, where another choice changes the answer: the GPU, SFTConfig's checkpointing, and
// the QLoRA recipe --trainer sft assumes. Each says the flag that asks for the other.
#pragma once
#include <string>

#include "hwprofiles/profile.h"
#include "simulator/simulate.h"

namespace lorasim::cli {

/// "no --gpu or --profile given: these are the NVIDIA H200 ...'s figures ...".
std::string default_gpu_note(const hw::Profile& profile);

/// Checkpointing on as --trainer sft sets it (`req`, simulated as `r`): where a split without it
/// fits and is faster, that split (what `recommend` answers); "" otherwise.
std::string trainer_ckpt_note(const sim::Request& req, const sim::Result& r);

/// A quantized base the --trainer sft preset takes as SFTTrainer gets it (not through
/// prepare_model_for_kbit_training): says so, names --kbit-prepare true for the other recipe and,
/// with `with_answer`, that recipe's recommendation.
std::string kbit_recipe_note(const sim::Request& req, bool with_answer);

}  // namespace lorasim::cli
