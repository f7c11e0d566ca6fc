// Run and workload labels of measurement rows (see measurement_label.h).
#include "calibrate/measurement_label.h"

#include <cstdio>
#include "model/training_stack.h"

namespace lorasim::calib {

std::string run_label(const std::string& model, int64_t depth, int64_t seq_len, int64_t micro_batch,
                      int64_t accumulation, bool grad_ckpt, int64_t lora_rank) {
  return (model.empty() ? "" : model + " ") + "L=" + std::to_string(depth) + " s=" + std::to_string(seq_len) +
         " b=" + std::to_string(micro_batch) + " a=" + std::to_string(accumulation) + (grad_ckpt ? " ckpt" : "") +
         (lora_rank ? " r=" + std::to_string(lora_rank) : "");
}

std::string run_label(const Measurement& m) {
  const auto& w = m.workload;
  return run_label(w.arch.name, w.arch.num_layers, w.train.seq_len, m.micro_batch, m.accumulation, w.train.grad_ckpt,
                   w.lora.rank != model::LoraSpec{}.rank ? w.lora.rank : 0);
}

namespace {

// The stack's name and the options it sets away from that stack's defaults: short enough for a
// table cell, and rows differing in any option land in different groups.
std::string stack_tag(const model::StackSpec& s) {
  const model::StackSpec d = model::training_stack(s.kind).default_spec();
  std::string t = model::stack_name(s.kind);
  if (s.attn_impl != d.attn_impl) t += std::string(" ") + model::attn_impl_name(s.attn_impl);
  if (s.lora_dropout != d.lora_dropout) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " dropout=%g", s.lora_dropout);
    t += buf;
  }
  if (s.autocast != d.autocast) t += s.autocast ? " autocast" : " no-autocast";
  if (s.fused_lm_head) t += " fused-lm-head";
  if (s.allocator != d.allocator) t += std::string(" ") + model::allocator_name(s.allocator) + "-alloc";
  return t;
}

}  // namespace

namespace {
// " nf4" (" nf4 no-dq", " nf4 unprepared") for a quantized base, " paged_adamw_8bit" for another
// optimizer: rows that differ in them are different workloads. "" for a float base under the default AdamW.
std::string quant_tag(const model::TrainingSpec& t) {
  std::string tag;
  if (t.quantized()) {
    tag += std::string(" ") + model::weight_format_name(t.weight_storage());
    if (t.weight_storage() != model::WeightFormat::int8 && !t.double_quant) tag += " no-dq";
    if (!t.kbit_prepare) tag += " unprepared";
  }
  if (t.optimizer != model::kDefaultOptimizer) tag += std::string(" ") + model::optimizer_name(t.optimizer);
  return tag;
}
}  // namespace

std::string workload_label(const Measurement& m) {
  const auto& w = m.workload;
  return w.arch.name + " L=" + std::to_string(w.arch.num_layers) + " s=" + std::to_string(w.train.seq_len) +
         (w.train.grad_ckpt ? " ckpt" : "") + " r=" + std::to_string(w.lora.rank) + " " + w.lora.targets_string() +
         " " + model::precision_name(w.train.precision) + " B=" + std::to_string(m.micro_batch * m.accumulation) + " " + stack_tag(w.stack) +
         quant_tag(w.train);
}

}  // namespace lorasim::calib
