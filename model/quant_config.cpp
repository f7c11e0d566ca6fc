// quantization_config -> QuantConfig, with errors that name the file and the key.
#include "model/quant_config.h"

#include <nlohmann/json.hpp>

#include "model/bounded_read.h"
#include "model/error.h"
#include "model/hf_config.h"

namespace lorasim::model {
namespace {

using nlohmann::json;

bool flag(const json& q, const char* key, const std::string& src) {
  auto it = q.find(key);
  if (it == q.end() || it->is_null()) return false;
  if (!it->is_boolean())
    throw ConfigError(src + ": \"quantization_config." + key + "\" must be true or false, got " + excerpt(it->dump(), 64));
  return it->get<bool>();
}

std::string text_of(const json& q, const char* key, const std::string& src, const std::string& fallback) {
  auto it = q.find(key);
  if (it == q.end() || it->is_null()) return fallback;
  if (!it->is_string())
    throw ConfigError(src + ": \"quantization_config." + key + "\" must be a string, got " + excerpt(it->dump(), 64));
  return it->get<std::string>();
}

}  // namespace

std::optional<QuantConfig> parse_quantization_config(const std::string& text, const std::string& source) {
  // Malformed JSON is model/hf_config.h's to report, with its line: the architecture is read from
  // the same file, and a command may ask for the quantization before it.
  if (!json_too_deep(text).empty()) return std::nullopt;  // hf_config.h refuses it
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto it = j.find("quantization_config");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object())
    throw ConfigError(source + ": \"quantization_config\" must be an object, got " + excerpt(it->dump(), 64));
  const json& q = *it;
  const std::string method = text_of(q, "quant_method", source, "bitsandbytes");
  if (method != "bitsandbytes")
    throw ConfigError(source + ": quantization_config.quant_method " + excerpt(json(method).dump(), 64) +
                      " is not modelled: lorasim models bitsandbytes (load_in_4bit, load_in_8bit) only");
  const bool four = flag(q, "load_in_4bit", source), eight = flag(q, "load_in_8bit", source);
  if (four && eight)
    throw ConfigError(source + ": quantization_config sets both load_in_4bit and load_in_8bit: keep one");
  if (!four && !eight) return std::nullopt;
  QuantConfig c;
  if (eight) {
    c.format = WeightFormat::int8;
    return c;
  }
  const std::string type = text_of(q, "bnb_4bit_quant_type", source, "fp4");  // BitsAndBytesConfig's default
  if (type != "nf4" && type != "fp4")
    throw ConfigError(source + ": quantization_config.bnb_4bit_quant_type must be \"nf4\" or \"fp4\", got " + excerpt(json(type).dump(), 64));
  c.format = type == "nf4" ? WeightFormat::nf4 : WeightFormat::fp4;
  c.double_quant = flag(q, "bnb_4bit_use_double_quant", source);
  const std::string dtype = text_of(q, "bnb_4bit_compute_dtype", source, "");
  if (!dtype.empty()) {
    try {
      c.compute = parse_precision(dtype.rfind("torch.", 0) == 0 ? dtype.substr(6) : dtype);
    } catch (const InputError&) {
      throw ConfigError(source + ": quantization_config.bnb_4bit_compute_dtype " + excerpt(json(dtype).dump(), 64) +
                        " is not one of bfloat16, float16, float32");
    }
  }
  return c;
}

std::optional<QuantConfig> load_quantization_config(const std::string& path) {
  return parse_quantization_config(read_hf_config_text(path), path);
}

}  // namespace lorasim::model
