#include "cli/describe.h"

#include "cli/format.h"
#include "model/analytics.h"

namespace lorasim::cli {

nlohmann::json stack_json(const model::StackSpec& s) {
  return {{"kind", model::stack_name(s.kind)},
          {"attn_impl", model::attn_impl_name(s.attn_impl)},
          {"lora_dropout", s.lora_dropout},
          {"allocator", model::allocator_name(s.allocator)},
          {"autocast", s.autocast},
          {"fused_lm_head", s.fused_lm_head}};
}

nlohmann::json workload_json(const model::Workload& w) {
  const model::ParamCounts pc = model::count_params(w.arch, w.lora);
  nlohmann::json j = {{"model", w.arch.name},
          {"num_layers", w.arch.num_layers},
          {"hidden_size", w.arch.hidden_size},
          {"vocab_size", w.arch.vocab_size},
          {"seq_len", w.train.seq_len},
          {"precision", model::precision_name(w.train.precision)},
          {"grad_ckpt", w.train.grad_ckpt},
          {"lora_rank", w.lora.rank},
          {"lora_alpha", w.lora.alpha},
          {"lora_targets", w.lora.targets_string()},
          {"base_params", pc.base},
          {"trainable_params", pc.trainable},
          {"stack", stack_json(w.stack)}};
  // Said where they differ from a float base under Trainer's default AdamW, so older outputs read the same.
  if (w.train.quantized() || w.train.optimizer != model::kDefaultOptimizer ||
      w.train.adapters_in_compute_precision) {
    j["quant"] = w.train.quantized() ? model::weight_format_name(w.train.weight_storage()) : "none";
    j["double_quant"] = w.train.double_quant;
    j["kbit_prepare"] = w.train.kbit_prepared();
    j["optim"] = model::optimizer_name(w.train.optimizer);
    j["adapter_dtype"] = w.train.adapters_in_compute_precision ? model::precision_name(w.train.precision) : "fp32";
  }
  return j;
}

nlohmann::json profile_json(const hw::Profile& p) {
  return {{"name", p.hw.name},
          {"display_name", p.hw.display_name},
          {"source", p.source_text_name},
          {"calibrated", p.hw.calibrated},
          {"memory_bytes", p.hw.memory_bytes},
          {"expected_time_error", p.hw.value("expected_time_error")},
          {"expected_memory_error", p.hw.value("expected_memory_error")}};
}

namespace {
std::string optimizer_text(const model::Workload& w) {
  return w.train.optimizer == model::kDefaultOptimizer ? "AdamW" : model::optimizer_name(w.train.optimizer);
}
// ", nf4 base (double quant, kbit-prepared)" for a quantized base, "" for a float one.
std::string quant_text(const model::Workload& w) {
  if (!w.train.quantized()) return "";
  const bool four_bit = w.train.weight_storage() != model::WeightFormat::int8;
  return std::string(", ") + model::weight_format_name(w.train.weight_storage()) + " base (" +
         (four_bit ? (w.train.double_quant ? "double quant, " : "no double quant, ") : "") +
         (w.train.kbit_prepare ? "kbit-prepared" : "not kbit-prepared") +
         (w.train.adapters_in_compute_precision ? ", adapters in " + std::string(model::precision_name(w.train.precision))
                                                : "") + ")";
}
}  // namespace

std::string workload_line(const model::Workload& w, bool grad_ckpt_both, bool with_seq) {
  return (with_seq ? "seq " + std::to_string(w.train.seq_len) + ", " : std::string()) + model::precision_name(w.train.precision) +
         ", LoRA r=" + std::to_string(w.lora.rank) + " alpha=" + fixed(w.lora.alpha, w.lora.alpha == static_cast<int64_t>(w.lora.alpha) ? 0 : 2) +
         " on " + w.lora.targets_string() + ", " + (grad_ckpt_both ? "grad ckpt auto (each split off and on)" : w.train.grad_ckpt ? "grad ckpt" : "no grad ckpt") +
         ", " + optimizer_text(w) + quant_text(w);
}

std::string profile_line(const hw::Profile& p) {
  return p.hw.display_name + " (" + (p.hw.calibrated ? "calibrated" : "datasheet prior") + ", " +
         p.source_text_name + ")";
}

void print_residuals(std::ostream& out, const std::vector<calib::Residual>& residuals) {
  Table t({"run", "step pred", "step meas", "err", "reserved pred", "reserved meas", "err"});
  for (const auto& r : residuals) {
    const bool mem = calib::measured(r.measured_reserved_bytes);
    t.add({r.label, human_seconds(r.predicted_step_time_s), human_seconds(r.measured_step_time_s),
           fixed(100 * (r.predicted_step_time_s / r.measured_step_time_s - 1), 1) + "%",
           human_bytes(r.predicted_reserved_bytes), mem ? human_bytes(r.measured_reserved_bytes) : "-",
           mem ? fixed(100 * (r.predicted_reserved_bytes / r.measured_reserved_bytes - 1), 1) + "%" : "-"});
  }
  t.print(out);
}

}  // namespace lorasim::cli
