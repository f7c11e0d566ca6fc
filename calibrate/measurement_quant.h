// The measurement rows' quantized-base and optimizer columns (issue 18): quant, double_quant,
// kbit_prepare, optim (docs/measurements.md), read into and written from a TrainingSpec.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/workload.h"

namespace lorasim::calib {

/// Sets `t` from a row's cells (`get(column)`, "" when absent): quant none|nf4|fp4|int8 (default
/// none), double_quant and kbit_prepare (default true, as the QLoRA recipe and the CLI), optim
/// (default adamw_torch). Throws InputError naming the column for a value outside those.
void read_quant_columns(const std::function<std::string(const char*)>& get, model::TrainingSpec& t);
/// The five cells (the four above and adapter_dtype: fp32, or the compute precision), in that order, of `t`.
std::vector<std::string> quant_cells(const model::TrainingSpec& t);

}  // namespace lorasim::calib
