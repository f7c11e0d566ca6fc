// Workload validation, precision and weight-format names, and what the cost model models.
#include "model/workload.h"

#include "model/analytics.h"
#include "model/checked.h"
#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::model {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// A refusal of the value the library calls `quantity` ("seq_len", "lora_rank"), the key a front
// end maps to its own name for it (the CLI: a flag). The key travels with the error once
// model/error.h carries one (issue 15, "library errors name quantities, the CLI names flags");
// until then it names the value here only.
InputError invalid(const char* quantity, const std::string& what) {
  return InputError(what, quantity);
}

// The static bytes the cost model derives (model/analytics.h, static_memory), each checked on
// its own so that the refusal says which count does not fit.
void check_static_bytes(const Workload& w) {
  const ParamCounts c = count_params(w.arch, w.lora);  // throws naming the model
  const std::string model = "model '" + w.arch.name + "' is too large to simulate: ";
  const char* beyond = " do not fit in a 64-bit integer";
  const char* check = " (check hidden_size, intermediate_size, num_hidden_layers and vocab_size)";
  Checked k;
  const int64_t weights = k.mul(c.base, bytes_per_element(w.train.precision));
  if (k.overflowed)
    throw InputError(model + "its frozen weights in " + precision_name(w.train.precision) + " (" + str(c.base) +
                     " parameters x " + str(bytes_per_element(w.train.precision)) + " bytes)" + beyond + check);
  // fp32 adapter weights and gradients, and AdamW's two fp32 moments: 16 bytes per parameter.
  const int64_t adapter_state = k.mul(c.trainable, 16);
  if (k.overflowed)
    throw InputError(model + "its adapters' weights, gradients and optimizer moments at LoRA rank " +
                     str(w.lora.rank) + " (" + str(c.trainable) + " parameters x 16 bytes)" + beyond +
                     " (lower the LoRA rank, or check the model's sizes)");
  k.add(weights, adapter_state);
  if (k.overflowed)
    throw InputError(model + "its frozen weights (" + str(weights) + " bytes) and adapter state (" +
                     str(adapter_state) + " bytes) together" + beyond + check);
}

void check_weight_format(const TrainingSpec& t) {
  const WeightFormat stored = t.weight_storage();
  const bool is_float =
      stored == WeightFormat::bf16 || stored == WeightFormat::fp16 || stored == WeightFormat::fp32;
  // Mixed precision keeps fp32 weights and computes in bf16 or fp16; a 16-bit float computes
  // in itself. A quantized base dequantizes to whichever compute precision.
  if (is_float && stored != WeightFormat::fp32 && stored != weight_format_of(t.precision))
    throw invalid("weight_format", std::string("base weights stored in ") + weight_format_name(stored) +
                                       " cannot compute in " + precision_name(t.precision) + ": store them in " +
                                       precision_name(t.precision) + " or fp32, or compute in " +
                                       weight_format_name(stored));
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp32: return "fp32";
  }
  return "?";
}

Precision parse_precision(const std::string& text) {
  if (text == "bf16" || text == "bfloat16") return Precision::bf16;
  if (text == "fp16" || text == "float16" || text == "half") return Precision::fp16;
  if (text == "fp32" || text == "float32" || text == "float") return Precision::fp32;
  throw InputError("unknown precision " + quoted_excerpt(text) + ": allowed are bf16, fp16, fp32");
}

int64_t bytes_per_element(Precision p) { return p == Precision::fp32 ? 4 : 2; }

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::fp16: return "fp16";
    case WeightFormat::fp32: return "fp32";
    case WeightFormat::int8: return "int8";
    case WeightFormat::nf4: return "nf4";
    case WeightFormat::fp4: return "fp4";
  }
  return "?";
}

WeightFormat parse_weight_format(const std::string& text) {
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp16, WeightFormat::fp32, WeightFormat::int8,
                         WeightFormat::nf4, WeightFormat::fp4})
    if (text == weight_format_name(f)) return f;
  throw invalid("weight_format", "unknown weight format " + quoted_excerpt(text) + ": allowed are bf16, fp16, fp32, int8, nf4, fp4");
}

int64_t TrainingSpec::adapter_element_bytes() const {
  return adapters_in_compute_precision ? bytes_per_element(precision) : 4;
}

WeightFormat weight_format_of(Precision p) {
  switch (p) {
    case Precision::bf16: return WeightFormat::bf16;
    case Precision::fp16: return WeightFormat::fp16;
    case Precision::fp32: return WeightFormat::fp32;
  }
  return WeightFormat::bf16;
}

bool is_quantized(WeightFormat f) {
  return f == WeightFormat::int8 || f == WeightFormat::nf4 || f == WeightFormat::fp4;
}

const char* optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::adamw_torch: return "adamw_torch";
    case Optimizer::adamw_torch_fused: return "adamw_torch_fused";
    case Optimizer::paged_adamw_8bit: return "paged_adamw_8bit";
    case Optimizer::paged_adamw_32bit: return "paged_adamw_32bit";
    case Optimizer::adamw_bnb_8bit: return "adamw_bnb_8bit";
  }
  return "?";
}

Optimizer parse_optimizer(const std::string& text) {
  for (Optimizer o : {Optimizer::adamw_torch, Optimizer::adamw_torch_fused, Optimizer::paged_adamw_8bit,
                      Optimizer::paged_adamw_32bit, Optimizer::adamw_bnb_8bit})
    if (text == optimizer_name(o)) return o;
  throw invalid("optim", "unknown optimizer '" + text +
                             "': allowed are adamw_torch, adamw_torch_fused, paged_adamw_8bit, paged_adamw_32bit, "
                             "adamw_bnb_8bit");
}

LengthDistribution TrainingSpec::length_distribution() const {
  return lengths ? *lengths : LengthDistribution::fixed(seq_len);
}

WeightFormat TrainingSpec::weight_storage() const {
  return weight_format ? *weight_format : weight_format_of(precision);
}

void Workload::validate() const {
  arch.validate();
  if (train.seq_len <= 0)
    throw invalid("seq_len", "sequence length must be a positive number of tokens, got " + str(train.seq_len));
  if (lora.rank <= 0) throw invalid("lora_rank", "LoRA rank must be positive, got " + str(lora.rank));
  if (lora.rank > arch.hidden_size)
    throw invalid("lora_rank", "LoRA rank " + str(lora.rank) + " exceeds the hidden size " + str(arch.hidden_size) +
                                   " of '" + arch.name + "': a LoRA rank must be at most the hidden size");
  if (!(lora.alpha > 0)) throw invalid("lora_alpha", "LoRA alpha must be positive, got " + std::to_string(lora.alpha));
  if (lora.targets.empty()) throw invalid("lora_targets", "LoRA needs at least one target projection");
  try {
    validate_padding(train.padding);
  } catch (const InputError& e) {
    throw invalid("padding", e.what());
  }
  check_weight_format(train);
  // FlashAttention 2 has kernels for fp16 and bf16 only: Transformers refuses an fp32 model.
  if (stack.attn_impl == AttnImpl::flash_attention_2 && train.precision == Precision::fp32)
    throw invalid("attn_impl", "flash_attention_2 runs in fp16 or bf16 only, not fp32: train in bf16 or fp16, or "
                               "use sdpa or eager attention");
  if (train.kbit_prepared() && !train.grad_ckpt)
    throw invalid("grad_ckpt", "prepare_model_for_kbit_training turns gradient checkpointing on: a prepared " +
                                   std::string(weight_format_name(train.weight_storage())) +
                                   " base trains with checkpointing (leave it on, or do not prepare the base)");
  if (train.data_parallel_processes <= 0)
    throw invalid("data_parallel_processes", "the number of data-parallel processes must be at least 1, got " +
                                                 str(train.data_parallel_processes));
  check_static_bytes(*this);
}

void require_modelled(const Workload& w) {
  const TrainingSpec& t = w.train;
  const WeightFormat stored = t.weight_storage();
  if (is_quantized(stored)) {
    const std::string refusal = training_stack(w.stack.kind).quantized_base_refusal(weight_format_name(stored));
    if (!refusal.empty()) throw invalid("weight_format", refusal);
  }
  if (!is_quantized(stored) && stored != weight_format_of(t.precision))
    throw invalid("weight_format",
                  std::string("base weights stored in ") + weight_format_name(stored) + " while computing in " +
                      precision_name(t.precision) + " are not modelled yet: the cost model counts the frozen " +
                      "weights in the compute precision (leave the storage format unset to predict them so)");
  if (t.data_parallel_processes != 1)
    throw invalid("data_parallel_processes",
                  "training over " + str(t.data_parallel_processes) + " data-parallel processes is not modelled " +
                      "yet: the cost model predicts one process on one device (predict one process with its " +
                      "share of the batch)");
  // The data's lengths and padding are not refused: the cost model predicts micro-batches whose
  // rows are `seq_len` tokens (padded), and the simulator evaluates one cost model per padded
  // length a micro-batch of the data can take (simulator/lengths_sim.h).
}

}  // namespace lorasim::model
