// The recommended split as the Hugging Face TrainingArguments it assumed: the two batch sizes,
// gradient checkpointing and the mixed-precision flag, as a flags line and as JSON, so that a
// script passing them on trains what was predicted (TRL's SFTConfig turns checkpointing and
// bf16 on unless told, so both are always said).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/workload.h"
#include "simulator/simulate.h"

namespace lorasim::cli {

struct HfArguments {
  int64_t per_device_train_batch_size = 0;
  int64_t gradient_accumulation_steps = 0;
  bool gradient_checkpointing = false;
  bool bf16 = false;  ///< autocast in bf16 (the workload's precision, bf16 where the GPU has it)
  bool fp16 = false;  ///< autocast in fp16 (a GPU without bf16, or --precision fp16)
  bool with_lengths = false;     ///< data of many lengths: group_by_length is one of the arguments
  bool group_by_length = false;
  /// TrainingArguments' optim where the prediction assumed one other than the default, or a
  /// quantized base (QLoRA users pick theirs); empty: not said.
  std::string optim;
  int64_t gpus = 1;  ///< data-parallel processes: per_device_train_batch_size is each one's
  bool fsdp = false;  ///< FSDP FULL_SHARD with one decoder layer per unit (simulator/fsdp.h)
  std::string decoder_layer_class;  ///< Transformers' decoder layer class, FSDP's unit: Qwen3DecoderLayer
};

/// Transformers' decoder layer class of a model_type: qwen3 -> Qwen3DecoderLayer.
std::string decoder_layer_class(const std::string& model_type);
/// TrainingArguments' fsdp_config for FULL_SHARD with PEFT, as JSON (the file --fsdp_config names).
nlohmann::json fsdp_config_json(const HfArguments& a);
/// The same as the fsdp_config lines of an `accelerate config` file.
std::string accelerate_fsdp_config(const HfArguments& a);

/// The BitsAndBytesConfig a quantized base assumed, as Python:
/// `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
/// bnb_4bit_compute_dtype=torch.bfloat16)`; "" for a float base.
std::string bnb_config_python(const model::Workload& w);
/// The same as the keywords of from_pretrained's quantization_config; null for a float base.
nlohmann::json bnb_config_json(const model::Workload& w);

/// What `split` of `w` assumed. Mixed precision is Trainer's autocast: none for fp32 or an
/// hf-peft stack without autocast (a half-precision model trained as loaded).
HfArguments hf_arguments(const sim::Split& split, const model::Workload& w, bool with_lengths = false,
                         bool group_by_length = false);
/// "--per_device_train_batch_size 16 --gradient_accumulation_steps 1 --gradient_checkpointing false --bf16 true"
std::string hf_flags(const HfArguments& a);
/// The recommendation's line for the program: "HF TrainingArguments: <flags>", or the stack's own
/// settings where its program is told otherwise (lightning's batch_size and Trainer arguments).
std::string program_line(const HfArguments& a, const sim::Split& s, const model::Workload& w);
/// The launchers of `a.gpus` processes, one per GPU: {"torchrun --nproc_per_node 2",
/// "accelerate launch --num_processes 2"}; both empty for one GPU (a plain `python train.py`).
struct LaunchCommands {
  std::string torchrun;
  std::string accelerate;
};
LaunchCommands launch_commands(const HfArguments& a);
/// {"per_device_train_batch_size": 16, ..., "bf16": true, "fp16": false}: TrainingArguments' keywords.
nlohmann::json hf_json(const HfArguments& a);

}  // namespace lorasim::cli
