// Workload validation and precision names.
#include "model/workload.h"

#include "model/analytics.h"
#include "model/error.h"

namespace lorasim::model {

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
  throw InputError("unknown precision '" + text + "': allowed are bf16, fp16, fp32");
}

int64_t bytes_per_element(Precision p) { return p == Precision::fp32 ? 4 : 2; }

void Workload::validate() const {
  arch.validate();
  if (train.seq_len <= 0)
    throw InputError("sequence length must be a positive number of tokens, got " +
                     std::to_string(train.seq_len), "seq_len");
  if (lora.rank <= 0)
    throw InputError("LoRA rank must be positive, got " + std::to_string(lora.rank), "lora_rank");
  if (lora.rank > arch.hidden_size)
    throw InputError("LoRA rank " + std::to_string(lora.rank) + " exceeds the hidden size " +
                     std::to_string(arch.hidden_size) + " of '" + arch.name +
                     "': a LoRA rank must be at most the hidden size", "lora_rank");
  if (!(lora.alpha > 0))
    throw InputError("LoRA alpha must be positive, got " + std::to_string(lora.alpha), "lora_alpha");
  if (lora.targets.empty()) throw InputError("LoRA needs at least one target projection", "lora_targets");
  static_memory(*this);  // throws when a parameter or byte count does not fit in int64
}

}  // namespace lorasim::model
