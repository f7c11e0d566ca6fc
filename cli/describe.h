// JSON and one-line descriptions of workloads and profiles, shared by every command's output.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include <ostream>
#include <vector>

#include "calibrate/fit.h"
#include "hwprofiles/profile.h"
#include "model/workload.h"

namespace lorasim::cli {

/// {"kind": "hf-peft", "attn_impl": "sdpa", "lora_dropout": 0, "allocator": "default", "autocast": true}
nlohmann::json stack_json(const model::StackSpec& s);
/// The workload, its stack as "stack" (stack_json).
nlohmann::json workload_json(const model::Workload& w);
nlohmann::json profile_json(const hw::Profile& p);
/// "seq 512, bf16, LoRA r=16 alpha=32 on q,k,v,o,gate,up,down, no grad ckpt, AdamW"
/// `grad_ckpt_both`: every split was simulated with and without checkpointing ("grad ckpt auto");
/// `with_seq` false: without "seq N," (data of many lengths: its own line says them).
std::string workload_line(const model::Workload& w, bool grad_ckpt_both = false, bool with_seq = true);
/// "NVIDIA H200 (calibrated, builtin:h200.toml)"
std::string profile_line(const hw::Profile& p);
/// A fit's residuals as a table: predicted vs measured step time and reserved memory per run.
void print_residuals(std::ostream& out, const std::vector<calib::Residual>& residuals);

}  // namespace lorasim::cli
