// --quant, --double-quant, --kbit-prepare, --optim, and a --model-config's quantization_config:
// parsed and reconciled here, counted by the model (model/quant_memory.h).
#include "cli/quant_args.h"

#include "model/error.h"
#include "model/quant_config.h"
#include "model/training_stack.h"

namespace lorasim::cli {
namespace {

bool boolean(const char* flag, const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw InputError(std::string(flag) + " must be true or false, got " + quoted_excerpt(text));
}

const char* tf(bool b) { return b ? "true" : "false"; }

// What the flags and the config say together.
struct QuantChoice {
  std::optional<model::WeightFormat> format;  ///< empty: a float base
  bool double_quant = true;
  std::optional<model::Precision> compute;    ///< the config's bnb_4bit_compute_dtype
};

std::optional<model::WeightFormat> flag_format(const std::string& text) {
  if (text == "none") return std::nullopt;
  if (text == "nf4" || text == "fp4" || text == "int8") return model::parse_weight_format(text);
  throw InputError("--quant must be none, nf4, fp4 or int8 (bitsandbytes), got " + quoted_excerpt(text));
}

QuantChoice choose(const WorkloadArgs& a) {
  QuantChoice c;
  const std::optional<model::WeightFormat> flag = a.quant ? flag_format(*a.quant) : std::nullopt;
  const std::optional<model::QuantConfig> cfg =
      a.model_config.empty() ? std::nullopt : model::parse_quantization_config(model_config_text(a), a.model_config);
  const bool four_bit_flag = flag && *flag != model::WeightFormat::int8;
  if (cfg) {
    const std::string said = model::weight_format_name(cfg->format);
    if (a.quant && (!flag || *flag != cfg->format))
      throw InputError("--quant " + *a.quant + " disagrees with " + a.model_config + "'s quantization_config (" +
                       said + "): drop --quant, or edit the config");
    if (a.double_quant && cfg->format != model::WeightFormat::int8 &&
        boolean("--double-quant", *a.double_quant) != cfg->double_quant)
      throw InputError("--double-quant " + *a.double_quant + " disagrees with " + a.model_config +
                       "'s quantization_config (bnb_4bit_use_double_quant " + tf(cfg->double_quant) +
                       "): drop --double-quant, or edit the config");
    c.format = cfg->format;
    c.double_quant = cfg->double_quant;
    c.compute = cfg->compute;
  } else {
    c.format = flag;
    if (a.double_quant) c.double_quant = boolean("--double-quant", *a.double_quant);
  }
  const bool four_bit = c.format && *c.format != model::WeightFormat::int8;
  if (a.double_quant && !four_bit && !four_bit_flag)
    throw InputError("--double-quant applies to a 4-bit base (--quant nf4 or fp4)");
  return c;
}

}  // namespace

void add_quant_options(OptionTable& t, WorkloadArgs& a) {
  t.optional_text("quant", a.quant, "frozen base stored by bitsandbytes: none (default, or the --model-config's quantization_config), nf4, fp4 (4-bit, QLoRA) or int8 (LLM.int8); computes in --precision; hf-peft only")
      .quantity("weight_format")
      .optional_text("double-quant", a.double_quant, "4-bit base: quantize the absmax values again (bnb_4bit_use_double_quant): true (default, QLoRA's recipe) or false")
      .optional_text("kbit-prepare", a.kbit_prepare, "quantized base prepared by PEFT's prepare_model_for_kbit_training (fp32 embeddings, LM head and norms; checkpointing on): true (default with --quant) or false")
      .quantity("kbit_prepare")
      .optional_text("adapter-dtype", a.adapter_dtype, "the LoRA adapters' dtype: fp32 (PEFT's default) or compute (the --precision; TRL's SFTTrainer keeps them so on a quantized base, and --trainer sft assumes it there)")
      .quantity("adapter_dtype")
      .text("optim", a.optim, "TrainingArguments optim: adamw_torch_fused (default, as Transformers 5's Trainer with torch >= 2.8), adamw_torch, paged_adamw_8bit, paged_adamw_32bit, adamw_bnb_8bit")
      .quantity("optim");
}

bool kbit_prepared(const WorkloadArgs& a) {
  const bool prepare = a.kbit_prepare ? boolean("--kbit-prepare", *a.kbit_prepare) : true;
  return choose(a).format.has_value() && prepare;
}

GradCkpt prepared_grad_ckpt(const WorkloadArgs& a) {
  if (a.grad_ckpt && *a.grad_ckpt == "false")
    throw InputError("--grad-ckpt false: prepare_model_for_kbit_training turns gradient checkpointing on for a "
                     "quantized base (drop --grad-ckpt false, or pass --kbit-prepare false)");
  return GradCkpt::on;
}

void apply_quant(const WorkloadArgs& a, model::Workload& w) {
  w.train.optimizer = model::parse_optimizer(a.optim);
  if (a.adapter_dtype) {
    if (*a.adapter_dtype != "fp32" && *a.adapter_dtype != "compute")
      throw InputError("--adapter-dtype must be fp32 or compute, got " + quoted_excerpt(*a.adapter_dtype));
    w.train.adapters_in_compute_precision = *a.adapter_dtype == "compute";
  }
  const QuantChoice c = choose(a);
  w.train.double_quant = c.double_quant;
  if (!c.format) {
    // false too: it says the user prepares no quantized base, of which there is none.
    if (a.kbit_prepare)
      throw InputError("--kbit-prepare " + std::string(tf(boolean("--kbit-prepare", *a.kbit_prepare))) +
                       ": prepare_model_for_kbit_training applies to a quantized base (add --quant nf4, fp4 or int8, "
                       "or drop --kbit-prepare)");
    return;
  }
  const std::string name = model::weight_format_name(*c.format);
  if (!model::training_stack(w.stack.kind).quantized_base_refusal(name).empty()) {
    std::string others;  // the stacks that do
    for (int i = 0; i < model::stack_count(); ++i)
      if (model::training_stack(model::StackKind{i}).quantized_base_refusal(name).empty())
        others += std::string(others.empty() ? "" : " or ") + "--stack " + model::stack_name(model::StackKind{i});
    throw InputError("--quant " + name + ": the " + model::stack_name(w.stack.kind) + " stack has no bitsandbytes" +
                     (others.empty() ? std::string() : ": use " + others));
  }
  if (c.compute) {
    if (a.precision != "auto" && model::parse_precision(a.precision) != *c.compute)
      throw InputError("--precision " + a.precision + " disagrees with " + a.model_config +
                       "'s bnb_4bit_compute_dtype (" + model::precision_name(*c.compute) +
                       "): drop --precision, or edit the config");
    w.train.precision = *c.compute;
  }
  w.train.weight_format = *c.format;
  w.train.kbit_prepare = kbit_prepared(a);
}

}  // namespace lorasim::cli
