#include "cli/preset_notes.h"

#include "cli/format.h"

namespace lorasim::cli {
namespace {

std::string split_and_time(const sim::Split& s) {
  return std::to_string(s.micro_batch) + "x" + std::to_string(s.accumulation) + " takes " +
         human_seconds(s.step_time_s) + " per step, peak " + human_bytes(s.peak_reserved_bytes) + " reserved";
}

}  // namespace

std::string default_gpu_note(const hw::Profile& p) {
  return "no --gpu or --profile given: these are the " + p.hw.display_name + "'s figures (--gpu " + p.hw.name +
         ", the default); name yours with --gpu NAME (see `lorasim profiles`) or --profile FILE";
}

std::string trainer_ckpt_note(const sim::Request& req, const sim::Result& r) {
  if (!r.recommended) return "";
  sim::Request off = req;
  off.workload.train.grad_ckpt = false;
  off.measured.clear();  // the runs measured were checkpointed
  const sim::Result o = sim::simulate(off);
  if (!o.recommended || o.splits[*o.recommended].step_time_s >= r.splits[*r.recommended].step_time_s) return "";
  return "gradient checkpointing is on as SFTConfig sets it (--trainer sft); without it (gradient_checkpointing=False) " +
         split_and_time(o.splits[*o.recommended]) +
         ", faster: `lorasim recommend` weighs both (--grad-ckpt auto), as --grad-ckpt auto does here";
}

std::string kbit_recipe_note(const sim::Request& req, bool with_answer) {
  std::string note =
      "--trainer sft assumes the quantized base reaches SFTTrainer as loaded, not through "
      "peft.prepare_model_for_kbit_training (which casts the embeddings, LM head and norms to fp32 and turns "
      "checkpointing on); if you call it first, as most QLoRA recipes do, pass --kbit-prepare true";
  if (!with_answer) return note;
  sim::Request prepared = req;
  prepared.workload.train.kbit_prepare = true;
  prepared.workload.train.grad_ckpt = true;
  prepared.measured.clear();  // the runs measured were of the other recipe
  const sim::Result p = sim::simulate(prepared);
  return note + ": then " +
         (p.recommended ? split_and_time(p.splits[*p.recommended]) + ", with checkpointing" : "no split fits");
}

}  // namespace lorasim::cli
