// Reads a Hugging Face config.json of a Llama / Qwen2 / Qwen3 / Mistral-style model.
#pragma once
#include <string>

#include "model/architecture.h"

namespace lorasim::model {

/// Parses config.json text; `source` names it in errors ("path/config.json:12: ...").
/// Throws ConfigError for malformed JSON, a missing or invalid field, or an unsupported
/// model_type.
Architecture parse_hf_config(const std::string& text, const std::string& source);

/// Reads and parses the file at `path`.
Architecture load_hf_config(const std::string& path);

}  // namespace lorasim::model
