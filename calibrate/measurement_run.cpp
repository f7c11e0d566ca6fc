// Reading, checking and writing the run columns (see measurement_run.h).
#include "calibrate/measurement_run.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "calibrate/content_hash.h"
#include "model/atomic_file.h"
#include "model/bounded_read.h"
#include "model/decimal.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

[[noreturn]] void bad(const std::string& column, const std::string& why) {
  throw ConfigError("column " + column + ": " + why);
}

// A whole number >= min written as digits only: a width or count of "1e3" or "2.0" is a recorder's bug.
int64_t whole(const std::string& column, const std::string& text, int64_t min, const std::string& what) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    bad(column, "expected " + what + " as a whole number >= " + std::to_string(min) + ", got " + quoted_excerpt(text));
  const int64_t v = std::stoll(text);
  if (v < min) bad(column, "expected " + what + " >= " + std::to_string(min) + ", got " + quoted_excerpt(text));
  return v;
}

double number(const std::string& column, const std::string& text, bool zero_allowed) {
  const std::optional<double> v = model::parse_decimal(text);  // decimal only, as every number lorasim reads
  if (!v || !std::isfinite(*v) || !(zero_allowed ? *v >= 0 : *v > 0))
    bad(column, std::string("expected a ") + (zero_allowed ? "non-negative" : "positive") + " number, got " + quoted_excerpt(text));
  return *v;
}
double positive(const std::string& column, const std::string& text) { return number(column, text, false); }
double non_negative(const std::string& column, const std::string& text) { return number(column, text, true); }

std::string number_cell(double v) {
  if (!measured(v)) return "";
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// `longest`, `multiple:N`, ...: the collations docs/measurements.md names (the --padding spellings and `fixed`).
void check_collation(const std::string& c) {
  if (c == "fixed" || c == "longest" || c == "max_length" || c == "packed" || c == "padding-free") return;
  if (c.rfind("multiple:", 0) == 0) {
    whole("collation", c.substr(9), 1, "multiple:N's N");
    return;
  }
  bad("collation", "expected fixed, longest, multiple:N, max_length, packed or padding-free, got " + quoted_excerpt(c));
}

}  // namespace

const std::vector<std::string>& run_columns() {
  static const std::vector<std::string> columns = {"device",         "device_memory_bytes", "processes",
                                                   "collation",      "padded_lengths",      "real_tokens",
                                                   "new_shapes_per_step", "model_config_sha256"};
  return columns;
}

model::PaddedWidths parse_padded_lengths(const std::string& cell) {
  try {
    return model::parse_padded_widths(cell);
  } catch (const InputError& e) {
    bad("padded_lengths", e.what());
  }
  return {};
}

std::string padded_lengths_cell(const model::PaddedWidths& widths) { return model::format_padded_widths(widths); }

void read_run_columns(const std::function<std::string(const std::string&)>& get, Measurement& m) {
  m.device = get("device");
  if (!get("device_memory_bytes").empty()) {
    m.device_memory_bytes = positive("device_memory_bytes", get("device_memory_bytes"));
    if (m.device_memory_bytes != std::floor(m.device_memory_bytes))
      bad("device_memory_bytes", "expected a whole number of bytes, got " + quoted_excerpt(get("device_memory_bytes")));
  }
  if (!get("processes").empty()) m.processes = whole("processes", get("processes"), 1, "a process count");
  if (!get("collation").empty()) {
    check_collation(get("collation"));
    m.collation = get("collation");
  }
  const int64_t seq_len = m.workload.train.seq_len;
  if (!get("padded_lengths").empty()) {
    m.padded_lengths = parse_padded_lengths(get("padded_lengths"));
    if (m.padded_lengths.back().width_tokens != seq_len)
      bad("padded_lengths", "the largest width, " + std::to_string(m.padded_lengths.back().width_tokens) +
                                ", must be the row's seq_len, " + std::to_string(seq_len) +
                                " (seq_len is the largest padded width the model saw)");
    if (m.collation == "fixed" && m.padded_lengths.size() > 1)
      bad("padded_lengths", "collation fixed has one width, seq_len, but the row lists " +
                                std::to_string(m.padded_lengths.size()));
  }
  if (!get("real_tokens").empty()) {
    m.real_tokens = positive("real_tokens", get("real_tokens"));
    const double most = static_cast<double>(m.micro_batch) * static_cast<double>(seq_len);
    if (m.real_tokens > most)
      bad("real_tokens", get("real_tokens") + " real tokens per micro-batch is more than micro_batch x seq_len = " +
                             number_cell(most) + ": no micro-batch holds that many");
  }
  if (!get("new_shapes_per_step").empty()) {
    m.new_shapes_per_step = non_negative("new_shapes_per_step", get("new_shapes_per_step"));
    if (m.new_shapes_per_step > static_cast<double>(m.accumulation))
      bad("new_shapes_per_step", get("new_shapes_per_step") + " new shapes per step is more than the step's " +
                                     std::to_string(m.accumulation) + " micro-batches");
  }
  const std::string hash = get("model_config_sha256");
  if (!hash.empty()) {
    check_sha256_cell(hash);
    m.model_config_sha256 = hash;
  }
}

std::vector<std::string> run_cells(const Measurement& m) {
  // A device name is free text: quoted where it holds a comma (the CSV reader keeps quoted commas).
  std::string device;
  for (char c : m.device)
    if (c != '"') device += c;
  if (device.find(',') != std::string::npos) device = '"' + device + '"';
  return {device,
          number_cell(m.device_memory_bytes),
          std::to_string(m.processes),
          m.collation,
          padded_lengths_cell(m.padded_lengths),
          number_cell(m.real_tokens),
          number_cell(m.new_shapes_per_step),
          m.model_config_sha256};
}

std::string resolve_config_path(const std::string& model, const std::string& rows_dir, bool has_hash) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(model);
  if (p.is_absolute()) return fs::exists(p, ec) ? model : "";
  if (rows_dir.empty()) return fs::exists(p, ec) ? model : "";  // text parsed with no file: the working directory
  {
    const fs::path beside = fs::path(rows_dir) / p;
    if (fs::exists(beside, ec)) return beside.lexically_normal().string();
  }
  if (!has_hash && fs::exists(p, ec)) return model;
  return "";
}

std::pair<std::string, std::string> store_config_beside(const std::string& config_path, const std::string& rows_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (model::written_in_place(rows_path) || !fs::is_regular_file(config_path, ec)) return {"", ""};
  std::ifstream in(config_path, std::ios::binary);
  if (!in) return {"", ""};
  const std::string bytes = model::read_bounded(in, config_path, "a config.json"), hash = sha256_hex(bytes);
  const fs::path rows(rows_path);
  const std::string folder = rows.stem().string() + ".configs";
  const fs::path dir = rows.parent_path() / folder;
  std::string name = hash.substr(0, 16) + ".json";
  auto holds = [&](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    // One byte more than `bytes` tells a longer file from it without reading all of it.
    return f && model::read_bounded(f, p.string(), "a config.json", model::kMaxDocumentBytes + 1) == bytes;
  };
  if (fs::exists(dir / name, ec) && !holds(dir / name)) name = hash + ".json";  // another config, same prefix
  if (!holds(dir / name)) {
    fs::create_directories(dir, ec);
    if (ec) throw ConfigError("cannot create '" + dir.string() + "' for the rows' model configs: " + ec.message());
    model::write_file_atomically((dir / name).string(), bytes, "model config");
  }
  return {folder + "/" + name, hash};
}

void check_sha256_cell(const std::string& hash) {
  if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    bad("model_config_sha256", "expected 64 lowercase hex digits (the SHA-256 of the config file), got " + quoted_excerpt(hash));
}

void check_config_hash(const std::string& path, const std::string& sha256) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read the config file '" + path + "'");
  const std::string actual = sha256_hex(model::read_bounded(in, path, "a config.json"));
  if (actual != sha256)
    bad("model_config_sha256", "the config file '" + path + "' hashes to " + actual + ", not the row's " + sha256 +
                                   ": it changed since the run (restore the file the run used, or remove the hash)");
}

}  // namespace lorasim::calib
