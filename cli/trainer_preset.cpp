// The --trainer presets (TRL 1.16's SFTConfig and Transformers 5's TrainingArguments defaults,
// docs/stacks.md) and how they fill the stack options the command line left unset.
#include "cli/trainer_preset.h"

#include "model/error.h"
#include "model/stack.h"
#include "model/training_stack.h"

namespace lorasim::cli {
namespace {

// SFTConfig: gradient_checkpointing=True, bf16 unless fp16, max_length=1024, padding to the
// longest of each micro-batch, and its loss through the fused LM head; on a quantized base no
// prepare_model_for_kbit_training (embeddings, LM head and norms stay in the compute precision)
// and the adapters kept in it too (bench/results/h200/qlora-run1). Trainer: no checkpointing,
// autocast with bf16/fp16, the full logits. A loop: no autocast at all.
// Lightning: a LightningModule returning the model's loss, precision "bf16-mixed" (autocast).
const TrainerPreset kPresets[] = {
    {"sft", "hf-peft", "true", "true", true, 1024, "false", "compute"},
    {"trainer", "hf-peft", "true", "false", false, 0, nullptr, nullptr},
    {"loop", "hf-peft", "false", "false", false, 0, nullptr, nullptr},
    {"lightning", "lightning", "true", "false", false, 0, nullptr, nullptr},
};

const char* const kTrainerHelp =
    "what trains, as it runs when not told otherwise: sft = TRL's SFTTrainer (--grad-ckpt true "
    "where the command's default is false; recommend's auto weighs it on and off; --fused-lm-head true, "
    "--autocast true, bf16 or fp16 by the GPU, with --lengths --max-length 1024 and --padding longest), "
    "trainer = Transformers' Trainer (--autocast true, --fused-lm-head false: the stack's defaults), "
    "loop = a plain PyTorch loop (--autocast false, --fused-lm-head false), lightning = a PyTorch Lightning "
    "Trainer over a LightningModule wrapping the PEFT model (--stack lightning, precision \"bf16-mixed\": "
    "--autocast true; \"bf16-true\": --autocast false); a flag given explicitly overrides its preset";

}  // namespace

void add_trainer_option(OptionTable& t, WorkloadArgs& a) {
  t.custom("trainer", "", [&a](const std::string& text) {
    trainer_preset(text);  // refuses an unknown name
    a.trainer = text;
  }, kTrainerHelp);
}

const TrainerPreset& trainer_preset(const std::string& name) {
  for (const TrainerPreset& p : kPresets)
    if (name == p.name) return p;
  throw InputError("--trainer must be sft, trainer, loop or lightning, got " + quoted_excerpt(name));
}

WorkloadArgs with_trainer_preset(WorkloadArgs a) {
  if (!a.trainer) return a;
  const TrainerPreset& p = trainer_preset(*a.trainer);
  // --stack's default is hf-peft's: a preset of another stack takes its place.
  if (a.stack.stack == "hf-peft") a.stack.stack = p.stack;
  const model::TrainingStack* stack = model::find_stack(a.stack.stack);
  if (!stack || stack != model::find_stack(p.stack))
    throw InputError("--trainer " + *a.trainer + " describes a program of the " + p.stack + " stack, not --stack " +
                     a.stack.stack + ": drop one of them");
  if (!a.stack.autocast) a.stack.autocast = std::string(p.autocast);
  if (!a.stack.fused_lm_head) a.stack.fused_lm_head = std::string(p.fused_lm_head);
  // Only a quantized base: on a float one PEFT's fp32 adapters stay whatever the program.
  if (a.quant && *a.quant != "none") {
    if (!a.kbit_prepare && p.quantized_kbit_prepare) a.kbit_prepare = std::string(p.quantized_kbit_prepare);
    if (!a.adapter_dtype && p.quantized_adapter_dtype) a.adapter_dtype = std::string(p.quantized_adapter_dtype);
  }
  return a;
}

int64_t trainer_max_length_tokens(const WorkloadArgs& a) {
  return a.trainer ? trainer_preset(*a.trainer).max_length_tokens : 0;
}

}  // namespace lorasim::cli
