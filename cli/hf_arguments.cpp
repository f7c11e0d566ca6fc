// The TrainingArguments a recommendation assumed, as flags and JSON.
#include "cli/hf_arguments.h"

namespace lorasim::cli {

HfArguments hf_arguments(const sim::Split& s, const model::Workload& w, bool with_lengths, bool group_by_length) {
  HfArguments a;
  a.per_device_train_batch_size = s.micro_batch;
  a.gradient_accumulation_steps = s.accumulation;
  a.gradient_checkpointing = s.grad_ckpt;
  // The lorasim runner sets its own precision; for hf-peft autocast is what Trainer's flag turns on.
  const bool mixed = w.stack.kind != model::StackKind::hf_peft || w.stack.autocast;
  a.bf16 = mixed && w.train.precision == model::Precision::bf16;
  a.fp16 = mixed && w.train.precision == model::Precision::fp16;
  a.with_lengths = with_lengths;
  a.group_by_length = group_by_length;
  if (w.train.quantized() || w.train.optimizer != model::Optimizer::adamw_torch)
    a.optim = model::optimizer_name(w.train.optimizer);
  a.gpus = s.gpus;
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
  if (a.gpus > 1) f += " --ddp_find_unused_parameters false";
  return f;
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
  if (a.gpus > 1) j["ddp_find_unused_parameters"] = false;
  return j;
}

}  // namespace lorasim::cli
