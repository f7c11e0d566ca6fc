// The TrainingArguments a recommendation assumed, as flags and JSON.
#include "cli/hf_arguments.h"

#include <cctype>

#include "model/training_stack.h"

namespace lorasim::cli {

HfArguments hf_arguments(const sim::Split& s, const model::Workload& w, bool with_lengths, bool group_by_length) {
  HfArguments a;
  a.per_device_train_batch_size = s.micro_batch;
  a.gradient_accumulation_steps = s.accumulation;
  a.gradient_checkpointing = s.grad_ckpt;
  // The stack says whether its half precision is Trainer's flag (for hf-peft: autocast).
  const bool mixed = model::training_stack(w.stack.kind).mixed_precision(w.stack);
  a.bf16 = mixed && w.train.precision == model::Precision::bf16;
  a.fp16 = mixed && w.train.precision == model::Precision::fp16;
  a.with_lengths = with_lengths;
  a.group_by_length = group_by_length;
  if (w.train.quantized() || w.train.optimizer != model::kDefaultOptimizer)
    a.optim = model::optimizer_name(w.train.optimizer);
  a.gpus = s.gpus;
  a.fsdp = s.fsdp;
  a.decoder_layer_class = decoder_layer_class(w.arch.model_type);
  return a;
}

namespace {
const char* torch_dtype(model::Precision p) {
  return p == model::Precision::bf16 ? "bfloat16" : p == model::Precision::fp16 ? "float16" : "float32";
}
}  // namespace

std::string bnb_config_python(const model::Workload& w) {
  if (!w.train.quantized()) return "";
  if (w.train.weight_storage() == model::WeightFormat::int8) return "BitsAndBytesConfig(load_in_8bit=True)";
  return std::string("BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"") +
         model::weight_format_name(w.train.weight_storage()) + "\", bnb_4bit_use_double_quant=" +
         (w.train.double_quant ? "True" : "False") + ", bnb_4bit_compute_dtype=torch." +
         torch_dtype(w.train.precision) + ")";
}

nlohmann::json bnb_config_json(const model::Workload& w) {
  if (!w.train.quantized()) return nullptr;
  if (w.train.weight_storage() == model::WeightFormat::int8) return {{"load_in_8bit", true}};
  return {{"load_in_4bit", true},
          {"bnb_4bit_quant_type", model::weight_format_name(w.train.weight_storage())},
          {"bnb_4bit_use_double_quant", w.train.double_quant},
          {"bnb_4bit_compute_dtype", torch_dtype(w.train.precision)}};
}

std::string hf_flags(const HfArguments& a) {
  std::string f = "--per_device_train_batch_size " + std::to_string(a.per_device_train_batch_size) +
                  " --gradient_accumulation_steps " + std::to_string(a.gradient_accumulation_steps) +
                  " --gradient_checkpointing " + (a.gradient_checkpointing ? "true" : "false");
  // Both said where neither is on: SFTConfig would otherwise turn bf16 on by itself.
  if (a.bf16) f += " --bf16 true";
  else if (a.fp16) f += " --fp16 true";
  else f += " --bf16 false --fp16 false";
  if (a.group_by_length) f += " --group_by_length true";
  if (!a.optim.empty()) f += " --optim " + a.optim;
  // Trainer wraps a PEFT model in DDP with find_unused_parameters=True unless told: one more walk
  // of the autograd graph per step, which the prediction does not count.
  if (a.fsdp) f += " --fsdp \"full_shard auto_wrap\" --fsdp_config fsdp_config.json";
  else if (a.gpus > 1) f += " --ddp_find_unused_parameters false";
  return f;
}

std::string program_line(const HfArguments& a, const sim::Split& s, const model::Workload& w) {
  const std::string own = model::training_stack(w.stack.kind).split_settings(w, s.micro_batch, s.accumulation, s.grad_ckpt);
  return own.empty() ? "HF TrainingArguments: " + hf_flags(a) : own;
}

LaunchCommands launch_commands(const HfArguments& a) {
  if (a.gpus <= 1) return {};
  const std::string n = std::to_string(a.gpus);
  return {"torchrun --nproc_per_node " + n, "accelerate launch --num_processes " + n};
}

nlohmann::json hf_json(const HfArguments& a) {
  nlohmann::json j = {{"per_device_train_batch_size", a.per_device_train_batch_size},
                      {"gradient_accumulation_steps", a.gradient_accumulation_steps},
                      {"gradient_checkpointing", a.gradient_checkpointing},
                      {"bf16", a.bf16},
                      {"fp16", a.fp16}};
  if (a.with_lengths) j["group_by_length"] = a.group_by_length;
  if (!a.optim.empty()) j["optim"] = a.optim;
  if (a.fsdp) {
    j["fsdp"] = "full_shard auto_wrap";
    j["fsdp_config"] = fsdp_config_json(a);
  } else if (a.gpus > 1) {
    j["ddp_find_unused_parameters"] = false;
  }
  return j;
}

std::string decoder_layer_class(const std::string& model_type) {
  std::string t = model_type;
  if (t.size() > 5 && t.compare(t.size() - 5, 5, "_text") == 0) t.resize(t.size() - 5);  // gemma3_text: Gemma3's
  std::string name;
  bool upper = true;
  for (char c : t) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return name + "DecoderLayer";
}

nlohmann::json fsdp_config_json(const HfArguments& a) {
  // use_orig_params: PEFT's frozen and trainable parameters share FSDP's flat parameters.
  return {{"transformer_layer_cls_to_wrap", nlohmann::json::array({a.decoder_layer_class})},
          {"backward_prefetch", "backward_pre"},
          {"forward_prefetch", true},
          {"use_orig_params", true},
          {"limit_all_gathers", true},
          {"activation_checkpointing", false}};
}

std::string accelerate_fsdp_config(const HfArguments& a) {
  return "distributed_type: FSDP, fsdp_sharding_strategy: FULL_SHARD, fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP, "
         "fsdp_transformer_layer_cls_to_wrap: " + a.decoder_layer_class +
         ", fsdp_backward_prefetch: BACKWARD_PRE, fsdp_forward_prefetch: true, fsdp_use_orig_params: true";
}

}  // namespace lorasim::cli
