// Reads a Hugging Face config.json of a Llama / Qwen2 / Qwen3 / Mistral-style model.
#pragma once
#include <string>

#include "model/architecture.h"

namespace lorasim::model {

/// Parses config.json text; `source` names it in errors ("path/config.json:12: ...").
/// Throws ConfigError for malformed JSON, a missing or invalid field, or an unsupported
/// model_type.
Architecture parse_hf_config(const std::string& text, const std::string& source);

/// The text of the config.json at `path`, read once and at most kMaxDocumentBytes
/// (model/bounded_read.h): a command reads both the architecture and the quantization_config
/// from it, and a pipe (`--model-config <(cat config.json)`) can be read only once.
/// Throws ConfigError for a directory, an unreadable file or one beyond the bound.
std::string read_hf_config_text(const std::string& path);

/// Reads (read_hf_config_text) and parses the file at `path`.
Architecture load_hf_config(const std::string& path);

}  // namespace lorasim::model
