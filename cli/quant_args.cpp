// --quant, --double-quant, --kbit-prepare, --optim: parsed here, counted by the model.
#include "cli/quant_args.h"

#include "model/error.h"

namespace lorasim::cli {
namespace {

bool boolean(const char* flag, const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw InputError(std::string(flag) + " must be true or false, got '" + text + "'");
}

bool quantized(const WorkloadArgs& a) {
  if (a.quant == "none") return false;
  if (a.quant == "nf4" || a.quant == "fp4" || a.quant == "int8") return true;
  throw InputError("--quant must be none, nf4, fp4 or int8 (bitsandbytes), got '" + a.quant + "'");
}

}  // namespace

void add_quant_options(OptionTable& t, WorkloadArgs& a) {
  t.text("quant", a.quant, "frozen base stored by bitsandbytes: none (default), nf4, fp4 (4-bit, QLoRA) or int8 (LLM.int8); computes in --precision; hf-peft only")
      .quantity("weight_format")
      .text("double-quant", a.double_quant, "4-bit base: quantize the absmax values again (bnb_4bit_use_double_quant): true (default, QLoRA's recipe) or false")
      .optional_text("kbit-prepare", a.kbit_prepare, "quantized base prepared by PEFT's prepare_model_for_kbit_training (fp32 embeddings, LM head and norms; checkpointing on): true (default with --quant) or false")
      .quantity("kbit_prepare")
      .text("optim", a.optim, "TrainingArguments optim: adamw_torch (default), adamw_torch_fused, paged_adamw_8bit, paged_adamw_32bit, adamw_bnb_8bit")
      .quantity("optim");
}

bool kbit_prepared(const WorkloadArgs& a) {
  const bool prepare = a.kbit_prepare ? boolean("--kbit-prepare", *a.kbit_prepare) : true;
  return quantized(a) && prepare;
}

GradCkpt prepared_grad_ckpt(const WorkloadArgs& a) {
  if (a.grad_ckpt && *a.grad_ckpt == "false")
    throw InputError("--grad-ckpt false: prepare_model_for_kbit_training turns gradient checkpointing on for a "
                     "--quant " + a.quant + " base (drop --grad-ckpt false, or pass --kbit-prepare false)");
  return GradCkpt::on;
}

void apply_quant(const WorkloadArgs& a, model::Workload& w) {
  w.train.optimizer = model::parse_optimizer(a.optim);
  w.train.double_quant = boolean("--double-quant", a.double_quant);
  if (!quantized(a)) {
    if (a.kbit_prepare && boolean("--kbit-prepare", *a.kbit_prepare))
      throw InputError("--kbit-prepare true: prepare_model_for_kbit_training applies to a quantized base (add --quant "
                       "nf4, fp4 or int8)");
    return;
  }
  if (w.stack.kind != model::StackKind::hf_peft)
    throw InputError("--quant " + a.quant + ": the " + model::stack_name(w.stack.kind) +
                     " stack (lorasim's LibTorch runner) has no bitsandbytes: use --stack hf-peft");
  w.train.weight_format = model::parse_weight_format(a.quant);
  w.train.kbit_prepare = kbit_prepared(a);
}

}  // namespace lorasim::cli
