// config.json -> Architecture, with errors that name the file, line and key.
#include "model/hf_config.h"

#include <cstdint>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "model/error.h"

namespace lorasim::model {
namespace {

using nlohmann::json;

int64_t line_of(const std::string& text, size_t byte) {
  int64_t line = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i)
    if (text[i] == '\n') ++line;
  return line;
}

int64_t get_int(const json& j, const char* key, const std::string& src, std::optional<int64_t> fallback = {}) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    throw ConfigError(src + ": missing key \"" + key + "\" (a Llama/Qwen/Mistral config.json has it)");
  }
  if (!it->is_number_integer() && !it->is_number_unsigned())
    throw ConfigError(src + ": \"" + key + "\" must be an integer, got " + it->dump());
  // Above INT64_MAX the conversion would wrap to a negative number and blame the sign.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw ConfigError(src + ": \"" + key + "\" is too large, got " + it->dump());
  return it->get<int64_t>();
}

double get_double(const json& j, const char* key, const std::string& src, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw ConfigError(src + ": \"" + key + "\" must be a number, got " + it->dump());
  return it->get<double>();
}

bool get_bool(const json& j, const char* key, const std::string& src, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw ConfigError(src + ": \"" + key + "\" must be true or false, got " + it->dump());
  return it->get<bool>();
}

}  // namespace

Architecture parse_hf_config(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(source + ":" + std::to_string(line_of(text, e.byte == 0 ? 0 : e.byte - 1)) +
                      ": malformed JSON: " + e.what());
  } catch (const json::exception& e) {  // out_of_range: a number beyond double ("1e999")
    throw ConfigError(source + ": malformed JSON: " + e.what());
  }
  if (!j.is_object()) throw ConfigError(source + ": expected a JSON object at the top level");
  // Some configs nest the language model (multimodal wrappers); use it when present.
  if (j.contains("text_config") && j["text_config"].is_object()) j = j["text_config"];

  auto type_it = j.find("model_type");
  const bool has_type = type_it != j.end() && !type_it->is_null();
  if (has_type && !type_it->is_string())
    throw ConfigError(source + ": \"model_type\" must be a string, got " + type_it->dump());
  const std::string type = has_type ? type_it->get<std::string>() : std::string();
  if (!type.empty() && type != "llama" && type != "mistral" && type != "qwen2" && type != "qwen3")
    throw ConfigError(source + ": model_type \"" + type +
                      "\" is not supported: lorasim models llama, mistral, qwen2 and qwen3 "
                      "(dense decoder-only) architectures");
  Architecture a;
  a.name = source;
  a.hidden_size = get_int(j, "hidden_size", source);
  a.intermediate_size = get_int(j, "intermediate_size", source);
  a.num_layers = get_int(j, "num_hidden_layers", source);
  a.num_heads = get_int(j, "num_attention_heads", source);
  a.num_kv_heads = get_int(j, "num_key_value_heads", source, a.num_heads);
  if (a.num_heads <= 0) throw ConfigError(source + ": \"num_attention_heads\" must be positive");
  a.head_dim = get_int(j, "head_dim", source, a.hidden_size / a.num_heads);
  a.vocab_size = get_int(j, "vocab_size", source);
  a.tie_embeddings = get_bool(j, "tie_word_embeddings", source, false);
  a.qk_norm = type == "qwen3";
  a.attention_bias = get_bool(j, "attention_bias", source, type == "qwen2");
  a.rope_theta = get_double(j, "rope_theta", source, 10000.0);
  a.rms_norm_eps = get_double(j, "rms_norm_eps", source, 1e-6);
  try {
    a.validate();
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
  return a;
}

Architecture load_hf_config(const std::string& path) {
  // A directory opens and reads as empty text, which the parser calls malformed JSON.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const std::filesystem::path inside = std::filesystem::path(path) / "config.json";
    throw ConfigError("model config '" + path + "' is a directory, not a config.json file" +
                      (std::filesystem::is_regular_file(inside, ec) ? ": pass " + inside.string() + " instead"
                                                                    : ": pass the config.json file itself"));
  }
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read model config '" + path + "': " + std::strerror(errno), "model_config");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_hf_config(ss.str(), path);
}

}  // namespace lorasim::model
