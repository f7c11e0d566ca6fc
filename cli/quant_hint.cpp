// The "a 4-bit base would fit" note of a recommendation that found no split.
#include "cli/quant_hint.h"

#include "cli/format.h"

namespace lorasim::cli {

model::Workload qlora_workload(model::Workload w) {
  w.train.weight_format = model::WeightFormat::nf4;
  w.train.double_quant = true;
  w.train.kbit_prepare = true;
  w.train.grad_ckpt = true;
  return w;
}

std::string quant_fit_note(const sim::Request& req, const sim::Result& r) {
  if (r.recommended || req.workload.train.quantized() || req.workload.stack.kind != model::StackKind::hf_peft)
    return "";
  sim::Request q = req;
  q.workload = qlora_workload(req.workload);
  q.measured.clear();  // the measured runs were of the float base
  const sim::Result qr = sim::simulate(q);
  if (!qr.recommended) return "";
  const sim::Split& s = qr.splits[*qr.recommended];
  return "a 4-bit base would fit: with --quant nf4 (QLoRA: NF4, double quantization, "
         "prepare_model_for_kbit_training, gradient checkpointing) micro-batch " +
         std::to_string(s.micro_batch) + " x accumulation " + std::to_string(s.accumulation) + " takes " +
         human_seconds(s.step_time_s) + " per step, peak " + human_bytes(s.peak_reserved_bytes) + " reserved";
}

}  // namespace lorasim::cli
