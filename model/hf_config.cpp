// config.json -> Architecture, with errors that name the file, line and key. Gemma 2/3 and
// Phi-3 fields and defaults are those of transformers 5.17's Gemma2Config, Gemma3TextConfig,
// Gemma3Config and Phi3Config.
#include "model/hf_config.h"

#include <cstdint>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "model/bounded_read.h"
#include "model/checked.h"
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
    throw ConfigError(src + ": \"" + key + "\" must be an integer, got " + excerpt(it->dump(), 64));
  // Above INT64_MAX the conversion would wrap to a negative number and blame the sign.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw ConfigError(src + ": \"" + key + "\" is too large, got " + excerpt(it->dump(), 64));
  return it->get<int64_t>();
}

double get_double(const json& j, const char* key, const std::string& src, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw ConfigError(src + ": \"" + key + "\" must be a number, got " + excerpt(it->dump(), 64));
  return it->get<double>();
}

bool get_bool(const json& j, const char* key, const std::string& src, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw ConfigError(src + ": \"" + key + "\" must be true or false, got " + excerpt(it->dump(), 64));
  return it->get<bool>();
}

// --- Gemma 2/3 and Phi-3 -------------------------------------------------------------------

bool is_gemma(const std::string& type) { return type == "gemma2" || type == "gemma3_text"; }

// A number that null switches off (a soft-cap, a window): 0 when null, `fallback` when absent.
double get_optional_number(const json& j, const char* key, const std::string& src, double fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_null()) return 0;
  if (!it->is_number() || !(it->get<double>() > 0))
    throw ConfigError(src + ": \"" + key + "\" must be a positive number or null, got " + excerpt(it->dump(), 64));
  return it->get<double>();
}

// A window in tokens: null (none) is 0, absent is `fallback`; else a positive integer.
int64_t get_window(const json& j, const std::string& src, int64_t fallback) {
  auto it = j.find("sliding_window");
  if (it == j.end()) return fallback;
  if (it->is_null()) return 0;
  const int64_t w = get_int(j, "sliding_window", src);
  if (w <= 0) throw ConfigError(src + ": \"sliding_window\" must be a positive number of tokens or null, got " +
                                excerpt(it->dump(), 64));
  return w;
}

// Dropout the counts leave out must be off (0, as every published config has it).
void require_no_dropout(const json& j, const char* key, const std::string& src) {
  if (get_double(j, key, src, 0.0) != 0.0)
    throw ConfigError(src + ": \"" + key + "\" is " + excerpt(j[key].dump(), 64) +
                      ": lorasim counts these models without dropout in the decoder (set it to 0.0)");
}

// Which layers attend locally: layer_types when given, else the config class's default pattern
// (layer i is full when i + 1 is a multiple of `pattern`; 1: every layer local).
std::vector<bool> read_local_layers(const json& j, int64_t layers, int64_t pattern, const std::string& src) {
  if (layers <= 0 || layers > kMaxLayers) return {};  // validate() refuses the count by name
  std::vector<bool> local(static_cast<size_t>(layers));
  auto it = j.find("layer_types");
  if (it == j.end() || it->is_null()) {
    for (int64_t i = 0; i < layers; ++i) local[static_cast<size_t>(i)] = pattern == 1 || (i + 1) % pattern != 0;
    return local;
  }
  if (!it->is_array()) throw ConfigError(src + ": \"layer_types\" must be a list of layer types");
  if (static_cast<int64_t>(it->size()) != layers)
    throw ConfigError(src + ": \"layer_types\" names " + std::to_string(it->size()) + " layers but " +
                      "\"num_hidden_layers\" is " + std::to_string(layers));
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    if (t == "sliding_attention") local[i] = true;
    else if (t != "full_attention")
      throw ConfigError(src + ": \"layer_types\"[" + std::to_string(i) + "] is " + excerpt(t.dump(), 64) +
                        ": expected \"sliding_attention\" or \"full_attention\"");
  }
  return local;
}

// The frozen parameters of Gemma 3's SigLIP vision tower (modeling_siglip.py, no pooling head) and
// its projector (a vision-by-text matrix and an RMSNorm over the vision width).
int64_t gemma3_vision_params(const json& v, int64_t text_hidden, const std::string& src) {
  if (!v.is_object()) throw ConfigError(src + ": \"vision_config\" must be an object");
  const std::string vsrc = src + ": vision_config";
  if (get_bool(v, "vision_use_head", vsrc, false))
    throw ConfigError(vsrc + ": \"vision_use_head\" true is not counted (Gemma 3 has no pooling head)");
  const int64_t h = get_int(v, "hidden_size", vsrc), i = get_int(v, "intermediate_size", vsrc);
  const int64_t layers = get_int(v, "num_hidden_layers", vsrc), image = get_int(v, "image_size", vsrc);
  const int64_t patch = get_int(v, "patch_size", vsrc), channels = get_int(v, "num_channels", vsrc, 3);
  for (int64_t x : {h, i, layers, image, patch, channels})
    if (x <= 0) throw ConfigError(vsrc + ": hidden_size, intermediate_size, num_hidden_layers, image_size, "
                                  "patch_size and num_channels must be positive");
  Checked k;
  const int64_t side = image / patch, positions = k.mul(side, side);
  // Patch convolution with its bias, position embeddings; per layer two LayerNorms (weight and
  // bias), q/k/v/out with biases, fc1 and fc2 with biases; the post LayerNorm; the projector.
  const int64_t hh = k.mul(h, h), hi = k.mul(h, i);
  const int64_t per_layer = k.add(k.add(k.mul(4, h), k.mul(4, k.add(hh, h))), k.add(k.add(hi, i), k.add(hi, h)));
  int64_t n = k.add(k.mul(k.mul(channels, k.mul(patch, patch)), h), h);
  n = k.add(n, k.mul(positions, h));
  n = k.add(n, k.mul(layers, per_layer));
  n = k.add(n, k.add(k.mul(2, h), k.add(k.mul(h, text_hidden), h)));
  if (k.overflowed) throw ConfigError(vsrc + ": the vision tower's parameter count does not fit in a 64-bit integer");
  return n;
}

// The fields that differ from the Llama family, read into `a` (whose sizes are already read).
void read_family_fields(const json& j, const std::string& type, Architecture& a, const std::string& src) {
  a.model_type = type;
  if (get_bool(j, "attention_bias", src, false))
    throw ConfigError(src + ": \"attention_bias\" true is not counted for " + type +
                      " (its published configs have none)");
  require_no_dropout(j, "attention_dropout", src);
  if (is_gemma(type)) {
    a.sandwich_norms = true;
    a.qk_norm = type == "gemma3_text";
    // query_pre_attn_scalar sets the attention's scale only: checked, not counted.
    if (get_double(j, "query_pre_attn_scalar", src, 256.0) <= 0)
      throw ConfigError(src + ": \"query_pre_attn_scalar\" must be positive");
    const bool g2 = type == "gemma2";
    a.final_logit_softcap = get_optional_number(j, "final_logit_softcapping", src, g2 ? 30.0 : 0.0);
    a.attn_logit_softcap = get_optional_number(j, "attn_logit_softcapping", src, g2 ? 50.0 : 0.0);
    a.sliding_window = get_window(j, src, 4096);
    const int64_t pattern = g2 ? 2 : get_int(j, "sliding_window_pattern", src, 6);
    if (pattern <= 0) throw ConfigError(src + ": \"sliding_window_pattern\" must be positive");
    a.local_layers = read_local_layers(j, a.num_layers, pattern, src);
    return;
  }
  // phi3: fused projections; every layer local when a sliding_window is set. rope_scaling
  // (longrope) and partial_rotary_factor change RoPE's tables, not what is counted.
  a.fused_qkv = a.fused_gate_up = true;
  require_no_dropout(j, "resid_pdrop", src);
  require_no_dropout(j, "embd_pdrop", src);
  const double rotary = get_double(j, "partial_rotary_factor", src, 1.0);
  if (!(rotary > 0 && rotary <= 1)) throw ConfigError(src + ": \"partial_rotary_factor\" must be in (0, 1]");
  a.sliding_window = get_window(j, src, 0);
  // Beyond the layer bound validate() refuses the model; no list of a billion layers first.
  if (a.num_layers > 0 && a.num_layers <= kMaxLayers)
    a.local_layers.assign(static_cast<size_t>(a.num_layers), a.sliding_window > 0);
}

}  // namespace

Architecture parse_hf_config(const std::string& text, const std::string& source) {
  // Before the parser: a message quoting a value dumps it recursively.
  if (const std::string deep = json_too_deep(text); !deep.empty()) throw ConfigError(source + ": " + deep);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(source + ":" + std::to_string(line_of(text, e.byte == 0 ? 0 : e.byte - 1)) +
                      ": malformed JSON: " + excerpt(e.what()));
  } catch (const json::exception& e) {  // out_of_range: a number beyond double ("1e999")
    throw ConfigError(source + ": malformed JSON: " + excerpt(e.what()));
  }
  if (!j.is_object()) throw ConfigError(source + ": expected a JSON object at the top level");
  // Some configs nest the language model (multimodal wrappers); use it when present. Gemma 3's
  // wrapper also holds a vision tower, whose frozen weights are counted.
  std::optional<json> vision;
  std::string outer_type;
  if (auto t = j.find("model_type"); t != j.end() && t->is_string()) outer_type = t->get<std::string>();
  if (outer_type == "gemma3" && j.contains("vision_config") && !j["vision_config"].is_null())
    vision = j["vision_config"];
  if (j.contains("text_config") && j["text_config"].is_object()) {
    j = j["text_config"];
    // Gemma3Config's text_config is a Gemma3TextConfig even where the file leaves its type out.
    if (outer_type == "gemma3" && !j.contains("model_type")) j["model_type"] = "gemma3_text";
  }

  auto type_it = j.find("model_type");
  const bool has_type = type_it != j.end() && !type_it->is_null();
  if (has_type && !type_it->is_string())
    throw ConfigError(source + ": \"model_type\" must be a string, got " + excerpt(type_it->dump(), 64));
  const std::string type = has_type ? type_it->get<std::string>() : std::string();
  const bool family = is_gemma(type) || type == "phi3";
  if (!type.empty() && !family && type != "llama" && type != "mistral" && type != "qwen2" && type != "qwen3")
    throw ConfigError(source + ": model_type " + excerpt(type_it->dump(), 64) +
                      " is not supported: lorasim models llama, mistral, qwen2, qwen3, gemma2, gemma3 "
                      "(gemma3_text) and phi3 (dense decoder-only) architectures");
  // Gemma and Phi-3 configs may leave fields to their config class's defaults; the others must
  // state them.
  const bool g2 = type == "gemma2", g3 = type == "gemma3_text", phi = type == "phi3";
  auto dflt = [&](int64_t gemma2, int64_t gemma3, int64_t phi3) -> std::optional<int64_t> {
    if (g2) return gemma2;
    if (g3) return gemma3;
    if (phi) return phi3;
    return std::nullopt;
  };
  Architecture a;
  a.name = source;
  a.hidden_size = get_int(j, "hidden_size", source, dflt(2304, 2304, 3072));
  a.intermediate_size = get_int(j, "intermediate_size", source, dflt(9216, 9216, 8192));
  a.num_layers = get_int(j, "num_hidden_layers", source, dflt(26, 26, 32));
  a.num_heads = get_int(j, "num_attention_heads", source, dflt(8, 8, 32));
  a.num_kv_heads = get_int(j, "num_key_value_heads", source, family && !phi ? 4 : a.num_heads);
  if (a.num_heads <= 0) throw ConfigError(source + ": \"num_attention_heads\" must be positive");
  // Gemma's head_dim is its own (256); Phi3Config derives it as Llama does.
  a.head_dim = get_int(j, "head_dim", source, is_gemma(type) ? 256 : a.hidden_size / a.num_heads);
  a.vocab_size = get_int(j, "vocab_size", source, dflt(256000, 262208, 32064));
  a.tie_embeddings = get_bool(j, "tie_word_embeddings", source, is_gemma(type));
  a.qk_norm = type == "qwen3";
  a.attention_bias = get_bool(j, "attention_bias", source, type == "qwen2");
  if (family) {
    a.attention_bias = false;
    read_family_fields(j, type, a, source);
  }
  if (vision) a.extra_frozen_params = gemma3_vision_params(*vision, a.hidden_size, source);
  a.rope_theta = get_double(j, "rope_theta", source, 10000.0);
  a.rms_norm_eps = get_double(j, "rms_norm_eps", source, phi ? 1e-5 : 1e-6);
  try {
    a.validate();
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
  return a;
}

std::string read_hf_config_text(const std::string& path) {
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
  return read_bounded(in, path, "a config.json");
}

Architecture load_hf_config(const std::string& path) { return parse_hf_config(read_hf_config_text(path), path); }

}  // namespace lorasim::model
