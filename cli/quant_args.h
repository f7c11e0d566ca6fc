// The quantized-base and optimizer flags: --quant, --double-quant, --kbit-prepare, --optim
// (bitsandbytes through Transformers and PEFT; model/quant_memory.h counts what they hold).
#pragma once
#include "cli/args.h"
#include "cli/option_table.h"
#include "model/workload.h"

namespace lorasim::cli {

void add_quant_options(OptionTable& table, WorkloadArgs& args);
/// Whether the flags ask for a quantized base prepared by prepare_model_for_kbit_training
/// (--quant other than none, --kbit-prepare not false). Throws for a malformed value.
bool kbit_prepared(const WorkloadArgs& args);
/// A prepared base checkpoints: on, and --grad-ckpt false refused naming both flags.
GradCkpt prepared_grad_ckpt(const WorkloadArgs& args);
/// Sets the workload's storage format, double quantization, preparation and optimizer from the
/// flags; refuses a quantized base on the lorasim stack and the 4-bit/prep flags without one.
void apply_quant(const WorkloadArgs& args, model::Workload& w);

}  // namespace lorasim::cli
