// Measurement files: one parser per format, a shared field mapping, errors with file:line.
#include "calibrate/measurement_io.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/measurement_checks.h"
#include "calibrate/measurement_quant.h"
#include "calibrate/measurement_run.h"
#include "model/architecture.h"
#include "model/atomic_file.h"
#include "model/bounded_read.h"
#include "model/decimal.h"
#include "model/error.h"
#include "model/hf_config.h"
#include "model/training_stack.h"

namespace lorasim::calib {
namespace {

// Columns in the order the writer emits them. `model` and `seq_len`, `micro_batch`,
// `accumulation` are required; `step_time_s` unless the row is an out-of-memory.
const std::vector<std::string> kColumns = {
    "model", "num_layers", "seq_len", "micro_batch", "accumulation", "grad_ckpt", "lora_rank", "lora_alpha",
    "lora_targets", "precision", "oom", "step_time_s", "micro_batch_time_s", "host_time_s", "device_time_s",
    "optimizer_time_s", "peak_allocated_bytes", "peak_reserved_bytes",
    // The training stack (model/stack.h); absent in files written before it was a column.
    "stack", "attn_impl", "lora_dropout", "allocator", "autocast", "loop", "fused_lm_head",
    // What describes the run (calibrate/measurement_run.h); absent in files written before them.
    "device", "device_memory_bytes", "processes", "collation", "padded_lengths", "real_tokens",
    "new_shapes_per_step", "model_config_sha256",
    // A quantized base and the optimizer (issue 18, model/quant_memory.h); absent before them.
    "quant", "double_quant", "kbit_prepare", "optim", "adapter_dtype"};
const std::vector<std::string> kLoops = {"trainer", "plain", "probe"};

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct RowError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double to_number(const std::string& key, const std::string& v) {
  const std::optional<double> d = model::parse_decimal(v);  // decimal only: no hex, inf or nan
  if (!d || !std::isfinite(*d)) throw RowError("column " + key + ": expected a number, got " + quoted_excerpt(v));
  return *d;
}

int64_t to_int(const std::string& key, const std::string& v, int64_t min) {
  const double d = to_number(key, v);
  // Range first: converting a double beyond int64 is undefined behaviour.
  if (!(d >= static_cast<double>(min) && d < 9.2e18) || d != static_cast<double>(static_cast<int64_t>(d)))
    throw RowError("column " + key + ": expected a whole number >= " + std::to_string(min) + ", got " + quoted_excerpt(v));
  return static_cast<int64_t>(d);
}

bool to_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "True" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "False" || v == "no" || v.empty()) return false;
  throw RowError("column " + key + ": expected true or false, got " + quoted_excerpt(v));
}

// Architecture cache: a config.json is read once per file, not once per row. A relative config
// path is the rows file's (measurement_run.h); a hash given must be the file's.
bool names_config(const std::string& name) {
  return name.find('/') != std::string::npos || (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
}

model::Architecture architecture(const std::string& name, const std::string& hash, const std::string& rows_dir,
                                 std::map<std::string, model::Architecture>& cache) {
  const bool is_path = names_config(name);
  if (!hash.empty()) check_sha256_cell(hash);
  if (!is_path) {
    if (!hash.empty())
      throw RowError("column model_config_sha256: the row's model '" + name +
                     "' is a preset, not a config file: drop the hash or name the config file");
    auto it = cache.find(name);
    if (it != cache.end()) return it->second;
    return cache.emplace(name, model::preset(name)).first->second;
  }
  const std::string path = resolve_config_path(name, rows_dir, !hash.empty());
  if (path.empty())
    throw RowError("column model: config file " + quoted_excerpt(name, 256) + " not found" +
                   (std::filesystem::path(name).is_absolute() || rows_dir.empty()
                        ? std::string()
                        : " beside the rows (in " + rows_dir + ")" +
                              (hash.empty() ? " nor in the working directory" : "")) +
                   ": keep the rows file and its configs together, or give the config's path");
  const std::string key = path + "|" + hash;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (!hash.empty()) check_config_hash(path, hash);
  return cache.emplace(key, model::load_hf_config(path)).first->second;
}

// A row without `stack` predates the column: lorasim's runner wrote it. Each option is checked
// against the stack as it is applied, so an error names the column that brought it in.
model::StackSpec stack_of(const std::function<std::string(const std::string&)>& get) {
  const bool given = !get("stack").empty();
  model::StackKind kind = model::StackKind::lorasim;
  try {
    if (given) kind = model::parse_stack(get("stack"));
  } catch (const Error& e) {
    throw RowError(std::string("column stack: ") + e.what());
  }
  model::StackSpec s = model::training_stack(kind).default_spec();
  const std::string hint = given ? "" : " (a row without a stack column is lorasim's runner: add stack hf-peft)";
  auto apply = [&](const char* column, const std::function<void()>& set) {
    if (get(column).empty()) return;
    try {
      set();
      s.validate();
    } catch (const Error& e) {
      throw RowError(std::string("column ") + column + ": " + e.what() + hint);
    }
  };
  apply("attn_impl", [&] { s.attn_impl = model::parse_attn_impl(get("attn_impl")); });
  apply("lora_dropout", [&] { s.lora_dropout = to_number("lora_dropout", get("lora_dropout")); });
  apply("allocator", [&] { s.allocator = model::parse_allocator(get("allocator")); });
  apply("autocast", [&] { s.autocast = to_bool("autocast", get("autocast")); });
  apply("fused_lm_head", [&] { s.fused_lm_head = to_bool("fused_lm_head", get("fused_lm_head")); });
  return s;
}

Measurement from_fields(const std::map<std::string, std::string>& f, const std::string& rows_dir,
                        std::map<std::string, model::Architecture>& cache) {
  auto get = [&](const std::string& k) -> std::string {
    auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  };
  for (const auto& [k, v] : f)
    if (std::find(kColumns.begin(), kColumns.end(), k) == kColumns.end())
      throw RowError("unknown column " + quoted_excerpt(k) + " (see docs/measurements.md)");
  for (const char* k : {"model", "seq_len", "micro_batch"})
    if (get(k).empty()) throw RowError(std::string("missing required column ") + k);
  Measurement m;
  m.workload.stack = stack_of(get);
  if (!get("loop").empty()) {
    if (std::find(kLoops.begin(), kLoops.end(), get("loop")) == kLoops.end())
      throw RowError("column loop: expected trainer, plain or probe, got " + quoted_excerpt(get("loop")));
    m.loop = get("loop");
  }
  try {
    m.workload.arch = architecture(get("model"), get("model_config_sha256"), rows_dir, cache);
  } catch (const Error& e) {
    throw RowError(e.what());
  }
  if (!get("num_layers").empty())
    m.workload.arch = model::truncated(m.workload.arch, to_int("num_layers", get("num_layers"), 1));
  m.workload.train.seq_len = to_int("seq_len", get("seq_len"), 1);
  m.micro_batch = to_int("micro_batch", get("micro_batch"), 1);
  m.accumulation = get("accumulation").empty() ? 1 : to_int("accumulation", get("accumulation"), 1);
  m.workload.train.grad_ckpt = to_bool("grad_ckpt", get("grad_ckpt"));
  if (!get("lora_rank").empty()) m.workload.lora.rank = to_int("lora_rank", get("lora_rank"), 1);
  if (!get("lora_alpha").empty()) m.workload.lora.alpha = to_number("lora_alpha", get("lora_alpha"));
  try {
    if (!get("lora_targets").empty()) {
      std::string t = get("lora_targets");
      for (char& c : t)
        if (c == ';' || c == '+' || c == ' ') c = ',';  // CSV cells cannot hold bare commas
      m.workload.lora.targets = model::parse_targets(t);
    }
    if (!get("precision").empty()) m.workload.train.precision = model::parse_precision(get("precision"));
    read_quant_columns([&](const char* k) { return get(k); }, m.workload.train);  // measurement_quant.h
    m.workload.validate();
  } catch (const Error& e) {
    throw RowError(e.what());
  }
  m.oom = to_bool("oom", get("oom"));
  // A negative time or size is a broken recorder, not data: it would print as "-5 B" and turn
  // relative errors into nonsense.
  auto opt = [&](const char* k, double& out) {
    if (not_measured_cell(get(k))) return;
    out = to_number(k, get(k));
    if (out < 0) throw RowError(std::string("column ") + k + ": expected a number >= 0, got " + quoted_excerpt(get(k)));
  };
  opt("step_time_s", m.step_time_s);
  opt("micro_batch_time_s", m.micro_batch_time_s);
  opt("host_time_s", m.host_time_s);
  opt("device_time_s", m.device_time_s);
  opt("optimizer_time_s", m.optimizer_time_s);
  opt("peak_allocated_bytes", m.peak_allocated_bytes);
  opt("peak_reserved_bytes", m.peak_reserved_bytes);
  if (!m.oom && !(m.step_time_s > 0)) throw RowError("column step_time_s: a positive time is required unless oom is true");
  try {
    read_run_columns(get, m);
  } catch (const Error& e) {
    throw RowError(e.what());
  }
  return m;
}

// The header is checked on its own line, so its errors point at it rather than at the first row.
void check_header(const std::vector<std::string>& header) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (std::find(kColumns.begin(), kColumns.end(), header[i]) == kColumns.end())
      throw RowError("unknown column " + quoted_excerpt(header[i]) + " (see docs/measurements.md)");
    for (size_t j = 0; j < i; ++j)
      if (header[j] == header[i])
        throw RowError("column " + header[i] + " appears twice in the header (columns " + std::to_string(j + 1) +
                       " and " + std::to_string(i + 1) + "): keep one");
  }
  for (const char* k : {"model", "seq_len", "micro_batch"})
    if (std::find(header.begin(), header.end(), k) == header.end())
      throw RowError(std::string("missing required column ") + k);
}

// One JSON object per line. The parser keeps the last of repeated keys, so repeats are found
// from its events: each top-level key with the values given to it, in order.
nlohmann::json parse_json_object(const std::string& line) {
  std::vector<std::string> keys;                               // in order of first appearance
  std::map<std::string, std::vector<std::string>> values;      // every value given to each key
  std::string key;
  bool after_key = false;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth != 1) return true;
    if (event == E::key) {
      key = parsed.get<std::string>();
      if (values.count(key) == 0) keys.push_back(key);
      values[key];
      after_key = true;
    } else if (after_key && (event == E::value || event == E::object_end || event == E::array_end)) {
      values[key].push_back(parsed.dump());
      after_key = false;
    }
    return true;
  };
  // Before the parser: the messages below dump values recursively.
  if (const std::string deep = model::json_too_deep(line); !deep.empty()) throw RowError(deep);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line, on_event);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw RowError("malformed JSON: " + excerpt(e.what()));
  }
  if (!j.is_object()) throw RowError("each line must be a JSON object");
  for (const std::string& k : keys)
    if (const auto& v = values[k]; v.size() > 1)
      throw RowError("key " + excerpt(nlohmann::json(k).dump(), 64) + " appears twice (" + excerpt(v[0], 64) +
                     ", then " + excerpt(v[1], 64) + "): keep one");
  return j;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_quotes = false;
  for (char c : line) {
    if (c == '"') in_quotes = !in_quotes;
    else if (c == ',' && !in_quotes) {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') cur += c;
  }
  out.push_back(cur);
  for (auto& s : out) {
    const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
    s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }
  return out;
}

std::string json_cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "";
  if (v.is_number()) {
    std::ostringstream ss;
    ss.precision(17);
    ss << v.get<double>();
    return ss.str();
  }
  throw RowError("a value must be a string, number, boolean or null, got " + excerpt(v.dump(), 64));
}

}  // namespace

std::vector<Measurement> parse_measurements(std::istream& in, const std::string& format, const std::string& source,
                                            const std::string& rows_dir, size_t max_rows) {
  std::vector<Measurement> rows;
  std::map<std::string, model::Architecture> cache;
  model::LineReader lines(in, source);  // streamed: comments and blank lines cost nothing
  std::string line;
  std::vector<std::string> header;
  RowsBySplit splits;
  while (lines.next(line)) {
    const int64_t lineno = lines.line_number();
    // Spreadsheets save CSV with a byte-order mark, which would otherwise start the first column's name.
    if (lineno == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    try {
      if (rows.size() >= max_rows)
        throw RowError("more than " + std::to_string(max_rows) + " rows, the most lorasim reads of one file: split "
                       "the file, or keep the runs of the workloads at hand");
      std::map<std::string, std::string> fields;
      if (format == "csv") {
        const auto cells = split_csv(line);
        if (header.empty()) {
          header = cells;
          check_header(header);
          continue;
        }
        if (cells.size() != header.size())
          throw RowError(std::to_string(cells.size()) + " cells but the header has " + std::to_string(header.size()));
        for (size_t i = 0; i < cells.size(); ++i) fields[header[i]] = cells[i];
      } else {
        const nlohmann::json j = parse_json_object(line);
        for (auto it = j.begin(); it != j.end(); ++it) fields[it.key()] = json_cell(it.value());
      }
      Measurement m = from_fields(fields, rows_dir, cache);
      if (const std::string why = implausible_figures(m); !why.empty()) throw RowError(why);
      if (const std::string why = splits.add(m, lineno); !why.empty()) throw RowError(why);
      rows.push_back(std::move(m));
    } catch (const RowError& e) {
      throw ConfigError(source + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  if (in.bad()) throw ConfigError(source + ": cannot be read to its end");
  if (rows.empty()) throw ConfigError(source + ": no measurement rows (see docs/measurements.md for the format)");
  return rows;
}

std::vector<Measurement> load_measurements(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError("measurements '" + path + "' is a directory: give a .csv or .jsonl file");
  const bool csv = has_suffix(path, ".csv");
  const bool jsonl = has_suffix(path, ".jsonl") || has_suffix(path, ".json");
  if (!csv && !jsonl) throw ConfigError("measurements '" + path + "': name it .csv or .jsonl so the format is clear");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read measurements '" + path + "': " + std::strerror(errno), "measurements");
  const std::string dir = std::filesystem::absolute(std::filesystem::path(path), ec).parent_path().string();
  return parse_measurements(in, csv ? "csv" : "jsonl", path, dir);
}

void check_measurements_output(const std::string& path) {
  if (!has_suffix(path, ".csv"))
    throw InputError("measurements are saved as CSV: name the file .csv so `lorasim fit` can read it back, not '" +
                     path + "'");
}

void write_measurements_csv(const std::vector<Measurement>& rows, const std::string& path) {
  check_measurements_output(path);
  std::ostringstream out;
  out.precision(10);
  for (size_t i = 0; i < kColumns.size(); ++i) out << (i ? "," : "") << kColumns[i];
  out << '\n';
  auto num = [&](double v) {
    if (measured(v)) out << v;
  };
  for (const Measurement& m : rows) {
    std::string targets = m.workload.lora.targets_string();
    for (char& c : targets)
      if (c == ',') c = ';';
    // A config travels with the rows: stored beside them by hash, named relative to them.
    const auto [config, hash] = names_config(m.workload.arch.name) ? store_config_beside(m.workload.arch.name, path)
                                                                   : std::pair<std::string, std::string>();
    out << (config.empty() ? m.workload.arch.name : config) << ',' << m.workload.arch.num_layers << ',' << m.workload.train.seq_len << ','
        << m.micro_batch << ',' << m.accumulation << ',' << (m.workload.train.grad_ckpt ? "true" : "false") << ','
        << m.workload.lora.rank << ',' << m.workload.lora.alpha << ',' << targets << ','
        << model::precision_name(m.workload.train.precision) << ',' << (m.oom ? "true" : "false") << ',';
    num(m.step_time_s);
    out << ',';
    num(m.micro_batch_time_s);
    out << ',';
    num(m.host_time_s);
    out << ',';
    num(m.device_time_s);
    out << ',';
    num(m.optimizer_time_s);
    out << ',';
    num(m.peak_allocated_bytes);
    out << ',';
    num(m.peak_reserved_bytes);
    const model::StackSpec& st = m.workload.stack;
    out << ',' << model::stack_name(st.kind) << ',' << model::attn_impl_name(st.attn_impl) << ',' << st.lora_dropout
        << ',' << model::allocator_name(st.allocator) << ',' << (st.autocast ? "true" : "false") << ',' << m.loop
        << ',' << (st.fused_lm_head ? "true" : "false");
    std::vector<std::string> cells = run_cells(m);
    if (!hash.empty()) cells.back() = hash;  // run_cells ends with model_config_sha256
    for (const std::string& cell : cells) out << ',' << cell;
    for (const std::string& cell : quant_cells(m.workload.train)) out << ',' << cell;
    out << '\n';
  }
  model::write_file_atomically(path, out.str(), "measurements");
}

}  // namespace lorasim::calib
