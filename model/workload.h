// A LoRA fine-tuning workload: architecture, adapters and training settings.
// Everything the simulator needs except the hardware and the batch split.
#pragma once
#include <cstdint>
#include <string>

#include "model/architecture.h"
#include "model/lora.h"
#include "model/stack.h"

namespace lorasim::model {

enum class Precision { bf16, fp16, fp32 };

const char* precision_name(Precision p);
/// Parses "bf16", "fp16", "fp32"; throws InputError otherwise.
Precision parse_precision(const std::string& text);
/// Bytes per element of the frozen weights and activations in this precision.
int64_t bytes_per_element(Precision p);

struct TrainingSpec {
  int64_t seq_len = 512;                ///< tokens per sequence (packed, no padding)
  Precision precision = Precision::bf16;  ///< frozen weights and activations; adapters stay fp32
  bool grad_ckpt = false;               ///< gradient checkpointing of every decoder block
  // The optimizer is AdamW over the adapters: two fp32 moments per trainable parameter.
};

struct Workload {
  Architecture arch;
  LoraSpec lora;
  TrainingSpec train;
  /// The program that trains. The library's default is lorasim's own runner, whose terms the
  /// analytic reference describes; the CLI's simulate and recommend default to hf-peft.
  StackSpec stack = StackSpec::lorasim_runner();

  /// Throws InputError for an inconsistent workload (rank above hidden size, seq len 0, a
  /// parameter or byte count beyond int64, ...).
  void validate() const;
};

}  // namespace lorasim::model
