// A LoRA fine-tuning workload: architecture, adapters and training settings.
// Everything the simulator needs except the hardware and the batch split.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "model/architecture.h"
#include "model/lengths.h"
#include "model/lora.h"
#include "model/stack.h"

namespace lorasim::model {

enum class Precision { bf16, fp16, fp32 };

const char* precision_name(Precision p);
/// Parses "bf16", "fp16", "fp32"; throws InputError otherwise.
Precision parse_precision(const std::string& text);
/// Bytes per element of the frozen weights and activations in this precision.
int64_t bytes_per_element(Precision p);

/// How the frozen base weights are stored, apart from the precision they compute in: a float
/// format, bitsandbytes' LLM.int8 (int8), or its 4-bit NormalFloat / float (nf4, fp4), which
/// are dequantized to the compute precision for every matmul.
enum class WeightFormat { bf16, fp16, fp32, int8, nf4, fp4 };

const char* weight_format_name(WeightFormat f);
/// Parses "bf16", "fp16", "fp32", "int8", "nf4", "fp4"; throws InputError otherwise.
WeightFormat parse_weight_format(const std::string& text);
/// The storage format of weights kept in the compute precision `p`.
WeightFormat weight_format_of(Precision p);
/// Whether `f` is one of bitsandbytes' quantized formats (int8, nf4, fp4).
bool is_quantized(WeightFormat f);

/// The optimizer over the adapters, as transformers' TrainingArguments(optim=...) names it:
/// torch's AdamW (two fp32 moments), or bitsandbytes' AdamW with 8-bit or 32-bit block-wise
/// state, paged (state in CUDA unified memory) or not. model/quant_memory.h counts their bytes.
enum class Optimizer { adamw_torch, adamw_torch_fused, paged_adamw_8bit, paged_adamw_32bit, adamw_bnb_8bit };
/// Transformers 5's TrainingArguments.optim default (with torch >= 2.8), which the hf-peft probe
/// calibrates with; the counts of adamw_torch are the same (the model has no term that tells them apart).
inline constexpr Optimizer kDefaultOptimizer = Optimizer::adamw_torch_fused;

const char* optimizer_name(Optimizer o);
/// Parses the names above; throws InputError (quantity "optim") otherwise.
Optimizer parse_optimizer(const std::string& text);

struct TrainingSpec {
  int64_t seq_len = 512;                ///< tokens per sequence when `lengths` is empty
  Precision precision = Precision::bf16;  ///< activations and the frozen weights' compute; adapters stay fp32
  bool grad_ckpt = false;               ///< gradient checkpointing of every decoder block
  // The optimizer is AdamW over the adapters: two fp32 moments per trainable parameter.

  /// The data's token lengths; empty: every sequence is `seq_len` tokens.
  std::optional<LengthDistribution> lengths;
  /// How micro-batches are padded. The default pads to the longest, which changes nothing
  /// when every sequence has one length.
  Padding padding;
  /// How the frozen base weights are stored; empty: in `precision`. A quantized base still
  /// computes in `precision`.
  std::optional<WeightFormat> weight_format;
  /// Processes training in data parallel, each on its own device (1: one device).
  int64_t data_parallel_processes = 1;
  /// A 4-bit base: its absmax values quantized again (bnb_4bit_use_double_quant, QLoRA's recipe).
  bool double_quant = true;
  /// A quantized base prepared by PEFT's prepare_model_for_kbit_training: every parameter that is
  /// not quantized (embeddings, LM head, norms, biases) cast to fp32, gradient checkpointing on
  /// (validate() requires grad_ckpt). Ignored for a float base.
  bool kbit_prepare = true;
  /// The adapters kept in the compute precision instead of fp32: TRL's SFTTrainer does so for a
  /// quantized base under bf16/fp16 (get_peft_model with autocast_adapter_dtype=False); PEFT's
  /// default casts them to fp32. Their weights, gradients and torch AdamW moments then take 2
  /// bytes each, not 4.
  bool adapters_in_compute_precision = false;
  Optimizer optimizer = kDefaultOptimizer;

  /// Bytes per element of the adapters' weights and gradients.
  int64_t adapter_element_bytes() const;

  /// `lengths`, or the one-point distribution at `seq_len` when it is empty.
  LengthDistribution length_distribution() const;
  /// `weight_format`, or the format of `precision` when it is empty.
  WeightFormat weight_storage() const;
  /// Whether the frozen projections are stored in a bitsandbytes format.
  bool quantized() const { return is_quantized(weight_storage()); }
  /// Whether prepare_model_for_kbit_training ran: a quantized base with kbit_prepare.
  bool kbit_prepared() const { return quantized() && kbit_prepare; }
};

struct Workload {
  Architecture arch;
  LoraSpec lora;
  TrainingSpec train;
  /// The program that trains. The library's default is lorasim's own runner, whose terms the
  /// analytic reference describes; the CLI's simulate and recommend default to hf-peft.
  StackSpec stack = StackSpec::lorasim_runner();

  /// Throws InputError for an inconsistent workload (rank above hidden size, seq len 0, a
  /// parameter or byte count beyond int64, ...), naming the quantity.
  void validate() const;
};

/// Throws InputError naming the first input of `w` that the cost model does not model yet:
/// float weights stored apart from the compute precision, a quantized base on a stack other
/// than hf-peft (bitsandbytes is not in LibTorch), or more than one data-parallel process. The
/// cost model's entry calls it, so such a workload is refused rather than predicted as if it were
/// today's. `lengths` and `padding` pass: the cost model predicts rows of `seq_len` tokens, and
/// simulator/lengths_sim.h evaluates one per padded length of the data.
void require_modelled(const Workload& w);

}  // namespace lorasim::model
