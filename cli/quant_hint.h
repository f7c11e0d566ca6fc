// When no split of a float base fits: whether a 4-bit base (QLoRA's recipe: NF4, double
// quantization, prepare_model_for_kbit_training, checkpointing) would, and at which split.
#pragma once
#include <string>

#include "simulator/simulate.h"

namespace lorasim::cli {

/// The QLoRA workload of `w`: nf4, double quantization, prepared, checkpointing on.
model::Workload qlora_workload(model::Workload w);
/// A note for a result `r` of `req` in which nothing fits: "a 4-bit base would fit ..." with the
/// fastest split and the flags, or "" when `req` is already quantized, not hf-peft, something
/// fits, or the 4-bit base does not fit either.
std::string quant_fit_note(const sim::Request& req, const sim::Result& r);
/// The same for data of many lengths: whether the 4-bit base's worst micro-batch fits.
std::string quant_fit_note(const sim::Request& req, const sim::LengthsOptions& options, const sim::LengthsResult& r);

}  // namespace lorasim::cli
