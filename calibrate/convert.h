// The conversions between the runner's, the fitter's and a profile's plain structs, in one
// place so that `calibrate`, `validate` and `fit` (and library users) agree on them.
// Torch-free: RunResult is only declared here (calibrate/runner.h defines it).
#pragma once
#include <cstdint>
#include <string>

#include "calibrate/fit.h"
#include "calibrate/measurement.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::calib {

struct RunResult;  // calibrate/runner.h

/// What a run of `w` measured, as a measurement row; an out-of-memory run keeps every
/// figure not measured.
Measurement to_measurement(const model::Workload& w, const RunResult& r);

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

/// The lowest relative errors a fitted profile claims: a fit's residuals over a few runs
/// understate what other workloads will see.
inline constexpr double kMinExpectedTimeError = 0.05;
inline constexpr double kMinExpectedMemoryError = 0.02;

/// Sets `hw`'s expected time and memory errors from a fit: twice the RMS residual, with the
/// floors above, until `lorasim validate` says otherwise.
void set_expected_errors(model::HardwareModel& hw, const FitReport& fit);

}  // namespace lorasim::calib
