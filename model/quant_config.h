// The `quantization_config` of a Hugging Face config.json (what save_pretrained writes for a
// bitsandbytes model, and what from_pretrained reads back): the base's storage format, double
// quantization and compute dtype. Kept apart from model/hf_config.h, which reads the architecture.
#pragma once
#include <optional>
#include <string>

#include "model/workload.h"

namespace lorasim::model {

struct QuantConfig {
  WeightFormat format = WeightFormat::nf4;  ///< nf4, fp4 (load_in_4bit) or int8 (load_in_8bit)
  bool double_quant = false;                ///< bnb_4bit_use_double_quant (BitsAndBytesConfig's default: false)
  /// bnb_4bit_compute_dtype; empty where the config leaves it out (BitsAndBytesConfig then
  /// computes in fp32) or for int8, whose matmuls run in the model's dtype.
  std::optional<Precision> compute;
};

/// The config's quantization_config: empty when it has none, one that quantizes nothing, or the
/// text is not a JSON object (model/hf_config.h's parser reports that, naming the line).
/// Throws ConfigError naming `source` and the key for a method other than bitsandbytes, both
/// load_in_4bit and load_in_8bit, or a malformed value.
std::optional<QuantConfig> parse_quantization_config(const std::string& text, const std::string& source);
/// Reads the file at `path` (a config.json) and parses its quantization_config.
std::optional<QuantConfig> load_quantization_config(const std::string& path);

}  // namespace lorasim::model
