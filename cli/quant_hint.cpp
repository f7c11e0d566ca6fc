// The "a 4-bit base would fit" note of a recommendation that found no split.
#include "cli/quant_hint.h"

#include "cli/format.h"
#include "model/training_stack.h"

namespace lorasim::cli {

model::Workload qlora_workload(model::Workload w) {
  w.train.weight_format = model::WeightFormat::nf4;
  w.train.double_quant = true;
  w.train.kbit_prepare = true;
  w.train.grad_ckpt = true;
  return w;
}

namespace {

bool worth_trying(const sim::Request& req, const sim::Result& r) {
  // FSDP of a quantized base is not modelled (simulator/fsdp.h).
  return !r.recommended && !req.fsdp && !req.workload.train.quantized() &&
         model::training_stack(req.workload.stack.kind).quantized_base_refusal("nf4").empty();
}

sim::Request qlora_request(const sim::Request& req) {
  sim::Request q = req;
  q.workload = qlora_workload(req.workload);
  q.measured.clear();  // the measured runs were of the float base
  return q;
}

std::string note_of(const sim::Result& qr) {
  if (!qr.recommended) return "";
  const sim::Split& s = qr.splits[*qr.recommended];
  return "a 4-bit base would fit: with --quant nf4 (QLoRA: NF4, double quantization, "
         "prepare_model_for_kbit_training, gradient checkpointing) micro-batch " +
         std::to_string(s.micro_batch) + " x accumulation " + std::to_string(s.accumulation) + " takes " +
         human_seconds(s.step_time_s) + " per step, peak " + human_bytes(s.peak_reserved_bytes) + " reserved";
}

}  // namespace

std::string quant_fit_note(const sim::Request& req, const sim::Result& r) {
  return worth_trying(req, r) ? note_of(sim::simulate(qlora_request(req))) : "";
}

std::string quant_fit_note(const sim::Request& req, const sim::LengthsOptions& options, const sim::LengthsResult& r) {
  return worth_trying(req, r.result) ? note_of(sim::simulate_lengths(qlora_request(req), options).result) : "";
}

}  // namespace lorasim::cli
