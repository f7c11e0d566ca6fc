// The names of measurement rows, in one place: the calibration plan, its progress, the fit's
// residuals and the validation's groups all name a run or a workload the same way.
#pragma once
#include <cstdint>
#include <string>

#include "calibrate/measurement.h"

namespace lorasim::calib {

/// A run's label: "qwen3-1.7b L=2 s=256 b=4 a=1 ckpt r=64", without the model when `model` is
/// empty and without the rank when `lora_rank` is 0. The calibration plan, its progress and the
/// fit's residuals name runs this way.
std::string run_label(const std::string& model, int64_t depth, int64_t seq_len, int64_t micro_batch,
                      int64_t accumulation, bool grad_ckpt, int64_t lora_rank);
/// The label of a measured run; the rank only where it is not the default LoRA rank.
std::string run_label(const Measurement& m);

/// The label of the group a row belongs to: its workload, effective batch and stack
/// ("tiny L=2 s=64 r=16 q,k,v,o,gate,up,down fp32 B=8 lorasim"; options away from the stack's
/// defaults follow its name: "... B=8 hf-peft dropout=0.05 expandable-alloc"). Rows of one
/// label are the splits of one simulation.
std::string workload_label(const Measurement& m);

}  // namespace lorasim::calib
