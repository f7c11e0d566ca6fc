// Reading, validating and writing hardware profiles (docs/profile-schema.md).
// The schema lives in the field tables below: parsing, validation, unknown-key detection and
// to_toml all walk the same tables, so a field added here is handled everywhere at once.
#include "hwprofiles/profile.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <toml++/toml.h>

#include "model/atomic_file.h"
#include "model/error.h"
#include "model/workload.h"

namespace lorasim::hw {
namespace {

// ---------------------------------------------------------------------------------------------
// The schema

/// What a numeric field may hold. Every number must also be finite.
enum class Range {
  positive,      ///< rates and bandwidths: a zero would divide by zero in the cost model
  non_negative,  ///< times, scales, byte counts, datasheet peaks (0 = unknown / unsupported)
  fraction,      ///< expected errors: [0, 10] (a relative error above 1000% is a typo)
};

struct NumberField {
  const char* section;
  const char* key;
  Range range;
  bool bytes;  ///< written as an integer when it holds one (byte counts read better that way)
  double* (*field)(model::HardwareModel&);
  /// Added within schema 1 after profiles were written: a file without the key keeps the
  /// default of model::HardwareModel, which reproduces what those profiles predicted.
  bool optional = false;
};

using HW = model::HardwareModel;

// Order here is the order to_toml writes within a section.
const std::vector<NumberField>& number_fields() {
  static const std::vector<NumberField> fields = {
      {"gpu", "peak_bf16_tflops", Range::non_negative, false,
        [](HW& h) { return &h.peak_bf16_tflops; }},
      {"gpu", "peak_fp16_tflops", Range::non_negative, false,
        [](HW& h) { return &h.peak_fp16_tflops; }},
      {"gpu", "peak_fp32_tflops", Range::non_negative, false,
        [](HW& h) { return &h.peak_fp32_tflops; }},
      {"gpu", "hbm_bandwidth_gbps", Range::non_negative, false,
        [](HW& h) { return &h.hbm_bandwidth_gbps; }},
      {"profile", "expected_time_error", Range::fraction, false,
        [](HW& h) { return &h.expected_time_error; }},
      {"profile", "expected_memory_error", Range::fraction, false,
        [](HW& h) { return &h.expected_memory_error; }},
      {"time", "host_fixed_s", Range::non_negative, false,
        [](HW& h) { return &h.time.host_fixed_s; }},
      {"time", "host_per_op_s", Range::non_negative, false,
        [](HW& h) { return &h.time.host_per_op_s; }},
      {"time", "recompute_host_share", Range::non_negative, false,
        [](HW& h) { return &h.time.recompute_host_share; }, true},
      {"time", "device_fixed_s", Range::non_negative, false,
        [](HW& h) { return &h.time.device_fixed_s; }},
      {"time", "gemm_tflops", Range::positive, false, [](HW& h) { return &h.time.gemm_tflops; }},
      {"time", "gemm_half_tokens", Range::non_negative, false,
        [](HW& h) { return &h.time.gemm_half_tokens; }},
      {"time", "head_tflops", Range::positive, false,
        [](HW& h) { return &h.time.head_tflops; }},
      {"time", "attention_tflops", Range::positive, false,
        [](HW& h) { return &h.time.attention_tflops; }},
      {"time", "memory_gbps", Range::positive, false, [](HW& h) { return &h.time.memory_gbps; }},
      {"time", "loss_gbps", Range::positive, false, [](HW& h) { return &h.time.loss_gbps; }},
      {"time", "per_kernel_s", Range::non_negative, false,
        [](HW& h) { return &h.time.per_kernel_s; }},
      {"time", "overlap_loss", Range::fraction, false,
        [](HW& h) { return &h.time.overlap_loss; }},
      {"time", "launch_queue_ops", Range::positive, false,
        [](HW& h) { return &h.time.launch_queue_ops; }},
      {"time", "optimizer_fixed_s", Range::non_negative, false,
        [](HW& h) { return &h.time.optimizer_fixed_s; }},
      {"time", "optimizer_per_tensor_s", Range::non_negative, false,
        [](HW& h) { return &h.time.optimizer_per_tensor_s; }},
      {"time", "optimizer_device_per_tensor_s", Range::non_negative, false,
        [](HW& h) { return &h.time.optimizer_device_per_tensor_s; }},
      {"time", "optimizer_per_param_s", Range::non_negative, false,
        [](HW& h) { return &h.time.optimizer_per_param_s; }},
      {"memory", "saved_scale", Range::non_negative, false,
        [](HW& h) { return &h.memory.saved_scale; }},
      {"memory", "attention_score_scale", Range::non_negative, false,
        [](HW& h) { return &h.memory.attention_score_scale; }},
      {"memory", "logits_scale", Range::non_negative, false,
        [](HW& h) { return &h.memory.logits_scale; }},
      {"memory", "workspace_bytes", Range::non_negative, true,
        [](HW& h) { return &h.memory.workspace_bytes; }},
      {"memory", "reserved_scale", Range::non_negative, false,
        [](HW& h) { return &h.memory.reserved_scale; }},
      {"memory", "reserved_overhead_bytes", Range::non_negative, true,
        [](HW& h) { return &h.memory.reserved_overhead_bytes; }},
      {"memory", "context_bytes", Range::non_negative, true,
        [](HW& h) { return &h.memory.context_bytes; }},
  };
  return fields;
}

// Keys that are not plain numbers, per section (read and written by hand below).
const std::vector<std::string> kGpuOtherKeys = {"name", "display_name", "memory_bytes",
                                                "bf16_supported"};
const std::vector<std::string> kProfileOtherKeys = {"calibrated", "coefficients_precision",
                                                    "overlap", "source"};
const std::vector<std::string> kTopLevelKeys = {"schema_version", "gpu",    "profile",
                                                "time",           "memory", "calibration"};

std::vector<std::string> known_keys(const std::string& section) {
  std::vector<std::string> keys;
  if (section == "gpu") keys = kGpuOtherKeys;
  if (section == "profile") keys = kProfileOtherKeys;
  for (const auto& f : number_fields())
    if (section == f.section) keys.emplace_back(f.key);
  return keys;
}

std::string key_path(const std::string& section, const std::string& key) {
  return section.empty() ? key : "[" + section + "]." + key;
}

// ---------------------------------------------------------------------------------------------
// Validation shared by parse_profile (with file positions) and validate_profile (without).

/// Returns the message prefix for a key path: "file:line:column: " or "file: ".
using Locator = std::function<std::string(const std::string& path)>;

std::string format_double(double v);

[[noreturn]] void fail(const Locator& where, const std::string& path, const std::string& what) {
  throw ConfigError(where(path) + path + " " + what);
}

void check_ranges(const Profile& p, const Locator& where) {
  if (p.schema_version != kSchemaVersion)
    fail(where, "schema_version", "must be " + std::to_string(kSchemaVersion) + " (got " +
                                      std::to_string(p.schema_version) + ")");
  if (p.hw.name.empty()) fail(where, "[gpu].name", "must not be empty");
  if (p.hw.display_name.empty()) fail(where, "[gpu].display_name", "must not be empty");
  if (p.hw.memory_bytes <= 0)
    fail(where, "[gpu].memory_bytes",
         "must be > 0 (got " + std::to_string(p.hw.memory_bytes) + ")");

  HW hw = p.hw;  // the accessors hand out mutable pointers; a copy keeps `p` const
  for (const auto& f : number_fields()) {
    const double v = *f.field(hw);
    const std::string path = key_path(f.section, f.key);
    const std::string got = " (got " + format_double(v) + ")";
    // Written as negations so that NaN fails every test.
    if (!std::isfinite(v)) fail(where, path, "must be a finite number" + got);
    switch (f.range) {
      case Range::positive:
        if (!(v > 0)) fail(where, path, "must be > 0" + got);
        break;
      case Range::non_negative:
        if (!(v >= 0)) fail(where, path, "must be >= 0" + got);
        break;
      case Range::fraction:
        if (!(v >= 0 && v <= 10))
          fail(where, path, "must be a fraction in [0, 10], e.g. 0.15 for 15%" + got);
        break;
    }
  }
  // Coefficients fitted in bf16 on a device without bf16 cannot describe any run on it.
  if (!p.hw.bf16_supported && p.hw.coefficients_precision == model::Precision::bf16)
    fail(where, "[profile].coefficients_precision",
         "is \"bf16\" but [gpu].bf16_supported = false; use \"fp16\" or \"fp32\"");
}

// ---------------------------------------------------------------------------------------------
// Reading TOML

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

/// Reads one document, remembering where each key was so later checks can point at it.
class Reader {
 public:
  explicit Reader(const std::string& source_name) : source_(source_name) {}

  std::string at(const toml::source_region& r) const {
    if (r.begin.line == 0) return source_ + ": ";
    return source_ + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column) +
           ": ";
  }
  std::string at_path(const std::string& path) const {
    auto it = positions_.find(path);
    return it == positions_.end() ? source_ + ": " : it->second;
  }
  [[noreturn]] void fail_at(const toml::node& n, const std::string& what) const {
    throw ConfigError(at(n.source()) + what);
  }

  /// The section's table; throws if it is missing or not a table.
  const toml::table& section(const toml::table& root, const std::string& name) {
    const toml::node* n = root.get(name);
    if (!n) throw ConfigError(source_ + ": [" + name + "] section is missing");
    const toml::table* t = n->as_table();
    if (!t) fail_at(*n, name + " must be a table ([" + name + "]), got " + type_name(*n));
    reject_unknown_keys(*t, name, known_keys(name));
    return *t;
  }

  void reject_unknown_keys(const toml::table& t, const std::string& section,
                           const std::vector<std::string>& known) const {
    for (auto&& [key, node] : t) {
      const std::string k(key.str());
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      std::string msg = "unknown key " + key_path(section, k);
      const std::string guess = nearest_name(k, known);
      if (!guess.empty()) msg += " (did you mean " + guess + "?)";
      msg += "; see docs/profile-schema.md for the keys of " +
             (section.empty() ? std::string("the top level") : "[" + section + "]");
      throw ConfigError(at(key.source()) + msg);
    }
  }

  const toml::node& require(const toml::table& t, const std::string& section,
                            const std::string& key) {
    const std::string path = key_path(section, key);
    const toml::node* n = t.get(key);
    if (!n) throw ConfigError(source_ + ": " + path + " is missing");
    positions_[path] = at(n->source());
    return *n;
  }

  double number(const toml::table& t, const std::string& section, const std::string& key) {
    const toml::node& n = require(t, section, key);
    if (auto f = n.as_floating_point()) return f->get();
    // Integers are numbers too: "gemm_half_tokens = 256" should not need a ".0".
    if (auto i = n.as_integer()) return static_cast<double>(i->get());
    fail_at(n, key_path(section, key) + " must be a number, got " + type_name(n));
  }

  int64_t integer(const toml::table& t, const std::string& section, const std::string& key) {
    const toml::node& n = require(t, section, key);
    if (auto i = n.as_integer()) return i->get();
    fail_at(n, key_path(section, key) + " must be an integer, got " + type_name(n));
  }

  bool boolean(const toml::table& t, const std::string& section, const std::string& key) {
    const toml::node& n = require(t, section, key);
    if (auto b = n.as_boolean()) return b->get();
    fail_at(n, key_path(section, key) + " must be true or false, got " + type_name(n));
  }

  std::string string(const toml::table& t, const std::string& section, const std::string& key) {
    const toml::node& n = require(t, section, key);
    if (auto s = n.as_string()) return s->get();
    fail_at(n, key_path(section, key) + " must be a string, got " + type_name(n));
  }

  /// A string that must be one of `choices`.
  std::string choice(const toml::table& t, const std::string& section, const std::string& key,
                     const std::vector<std::string>& choices) {
    std::string v = string(t, section, key);
    if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "\"" : ", \"") + c + "\"";
    fail_at(*t.get(key),
            key_path(section, key) + " must be one of " + list + " (got \"" + v + "\")");
  }

  CalibrationInfo calibration(const toml::table& t) {
    // toml::table is a sorted map; restore file order from the keys' positions.
    std::vector<std::pair<toml::source_position, std::pair<std::string, CalibrationValue>>> read;
    for (auto&& [key, node] : t) {
      const std::string k(key.str());
      CalibrationValue v;
      if (auto s = node.as_string()) {
        v = s->get();
      } else if (auto i = node.as_integer()) {
        v = i->get();
      } else if (auto f = node.as_floating_point()) {
        v = f->get();
      } else if (auto b = node.as_boolean()) {
        v = b->get();
      } else if (node.is_date() || node.is_time() || node.is_date_time()) {
        // Kept as text: provenance only, and calibrate writes dates as strings anyway.
        std::ostringstream os;
        if (auto d = node.as_date()) os << d->get();
        if (auto tm = node.as_time()) os << tm->get();
        if (auto dt = node.as_date_time()) os << dt->get();
        v = os.str();
      } else {
        fail_at(node, key_path("calibration", k) + " must be a string, number or boolean, got " +
                          type_name(node) + " (nested tables and arrays are not kept)");
      }
      read.push_back({key.source().begin, {k, std::move(v)}});
    }
    std::stable_sort(read.begin(), read.end(), [](const auto& a, const auto& b) {
      return std::make_pair(a.first.line, a.first.column) <
             std::make_pair(b.first.line, b.first.column);
    });
    CalibrationInfo info;
    for (auto& r : read) info.entries.push_back(std::move(r.second));
    return info;
  }

 private:
  std::string source_;
  std::map<std::string, std::string> positions_;  // key path -> "file:line:column: "
};

model::Precision precision_from(const std::string& s) {
  if (s == "fp16") return model::Precision::fp16;
  if (s == "fp32") return model::Precision::fp32;
  return model::Precision::bf16;
}

// ---------------------------------------------------------------------------------------------
// Writing TOML

/// Shortest text that reads back as exactly `v`, always in TOML float syntax.
std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip, locale-free
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string format_bytes(double v) {
  // Below 2^53 every integer is exact in a double, so the integer form reads back identically.
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= 9007199254740992.0)
    return std::to_string(static_cast<int64_t>(v));
  return format_double(v);
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string format_key(const std::string& k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  return bare ? k : quote(k);
}

std::string format_value(const CalibrationValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return quote(x);
        if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
        if constexpr (std::is_same_v<T, double>) return format_double(x);
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
      },
      v);
}

void write_numbers(std::ostringstream& os, const Profile& p, const std::string& section) {
  HW hw = p.hw;
  for (const auto& f : number_fields()) {
    if (section != f.section) continue;
    const double v = *f.field(hw);
    os << f.key << " = " << (f.bytes ? format_bytes(v) : format_double(v)) << "\n";
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const CalibrationValue* CalibrationInfo::find(const std::string& key) const {
  for (const auto& e : entries)
    if (e.first == key) return &e.second;
  return nullptr;
}

void CalibrationInfo::set(const std::string& key, CalibrationValue value) {
  for (auto& e : entries) {
    if (e.first == key) {
      e.second = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

bool operator==(const CalibrationInfo& a, const CalibrationInfo& b) {
  return a.entries == b.entries;
}

bool operator==(const Profile& a, const Profile& b) {
  const HW& x = a.hw;
  const HW& y = b.hw;
  HW xc = x, yc = y;
  for (const auto& f : number_fields())
    if (*f.field(xc) != *f.field(yc)) return false;
  return a.schema_version == b.schema_version && a.source_text_name == b.source_text_name &&
         a.origin_source == b.origin_source && a.calibration == b.calibration &&
         x.name == y.name && x.display_name == y.display_name &&
         x.memory_bytes == y.memory_bytes && x.bf16_supported == y.bf16_supported &&
         x.coefficients_precision == y.coefficients_precision && x.overlap == y.overlap &&
         x.calibrated == y.calibrated;
}

bool operator!=(const Profile& a, const Profile& b) { return !(a == b); }

Profile parse_profile(std::string_view toml_text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& pos = e.source().begin;
    throw ConfigError(source_name + ":" + std::to_string(pos.line) + ":" +
                      std::to_string(pos.column) + ": " + std::string(e.description()));
  }

  Reader r(source_name);
  Profile p;
  p.source_text_name = source_name;

  // The version comes first: a newer file may well have keys this reader calls unknown.
  const toml::node* version = root.get("schema_version");
  if (!version)
    throw ConfigError(source_name + ": schema_version is missing (a profile starts with "
                                    "`schema_version = " + std::to_string(kSchemaVersion) + "`)");
  const int64_t v = r.integer(root, "", "schema_version");
  if (v > kSchemaVersion)
    throw ConfigError("profile " + source_name +
                      " was written by a newer lorasim (schema_version " + std::to_string(v) +
                      "); this one reads " + std::to_string(kSchemaVersion) +
                      ": upgrade lorasim, or recalibrate with this version");
  if (v < 1) r.fail_at(*version, "schema_version must be " + std::to_string(kSchemaVersion) +
                                     " (got " + std::to_string(v) + ")");
  p.schema_version = static_cast<int>(v);
  r.reject_unknown_keys(root, "", kTopLevelKeys);

  const toml::table& gpu = r.section(root, "gpu");
  p.hw.name = r.string(gpu, "gpu", "name");
  p.hw.display_name = r.string(gpu, "gpu", "display_name");
  p.hw.memory_bytes = r.integer(gpu, "gpu", "memory_bytes");
  p.hw.bf16_supported = r.boolean(gpu, "gpu", "bf16_supported");

  const toml::table& prof = r.section(root, "profile");
  p.hw.calibrated = r.boolean(prof, "profile", "calibrated");
  p.hw.coefficients_precision = precision_from(
      r.choice(prof, "profile", "coefficients_precision", {"bf16", "fp16", "fp32"}));
  p.hw.overlap = r.choice(prof, "profile", "overlap", {"max", "sum"}) == "sum"
                     ? model::Overlap::sum
                     : model::Overlap::max;
  // Optional: a hand-written profile need not say where it came from.
  if (prof.get("source")) p.origin_source = r.string(prof, "profile", "source");

  const toml::table& time = r.section(root, "time");
  const toml::table& memory = r.section(root, "memory");
  const std::map<std::string, const toml::table*> tables = {
      {"gpu", &gpu}, {"profile", &prof}, {"time", &time}, {"memory", &memory}};
  for (const auto& f : number_fields()) {
    if (f.optional && !tables.at(f.section)->get(f.key)) continue;
    *f.field(p.hw) = r.number(*tables.at(f.section), f.section, f.key);
  }

  if (const toml::node* cal = root.get("calibration")) {
    const toml::table* t = cal->as_table();
    if (!t) r.fail_at(*cal, "calibration must be a table ([calibration]), got " + type_name(*cal));
    p.calibration = r.calibration(*t);
  }

  check_ranges(p, [&r](const std::string& path) { return r.at_path(path); });
  return p;
}

Profile load_profile_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read profile '" + path + "': " + std::strerror(errno) +
                      " (pass a profile file, or a built-in name; see `lorasim profiles`)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad() || text.fail())  // e.g. a directory opens but does not read
    throw ConfigError("cannot read profile '" + path + "': not a readable file");
  return parse_profile(text.str(), path);
}

void validate_profile(const Profile& profile) {
  const std::string prefix = (profile.source_text_name.empty()
                                  ? "profile '" + profile.hw.name + "'"
                                  : profile.source_text_name) +
                             ": ";
  check_ranges(profile, [&prefix](const std::string&) { return prefix; });
}

std::string to_toml(const Profile& p) {
  const HW& hw = p.hw;
  std::ostringstream os;
  os << "# lorasim hardware profile: " << hw.display_name << ". Schema: docs/profile-schema.md.\n"
     << "schema_version = " << p.schema_version << "\n\n";

  os << "[gpu]\n"
     << "name = " << quote(hw.name) << "\n"
     << "display_name = " << quote(hw.display_name) << "\n"
     << "memory_bytes = " << hw.memory_bytes << "\n"
     << "bf16_supported = " << (hw.bf16_supported ? "true" : "false") << "\n";
  write_numbers(os, p, "gpu");

  os << "\n[profile]\n"
     << "calibrated = " << (hw.calibrated ? "true" : "false") << "\n"
     << "coefficients_precision = " << quote(model::precision_name(hw.coefficients_precision))
     << "\n"
     << "overlap = " << quote(hw.overlap == model::Overlap::sum ? "sum" : "max") << "\n";
  write_numbers(os, p, "profile");
  os << "source = " << quote(p.origin_source) << "\n";

  os << "\n[time]\n";
  write_numbers(os, p, "time");
  os << "\n[memory]\n";
  write_numbers(os, p, "memory");

  if (!p.calibration.empty()) {
    os << "\n[calibration]\n";
    for (const auto& [key, value] : p.calibration.entries)
      os << format_key(key) << " = " << format_value(value) << "\n";
  }
  return os.str();
}

void write_profile_file(const Profile& profile, const std::string& path) {
  validate_profile(profile);
  model::write_file_atomically(path, to_toml(profile), "profile");
}

}  // namespace lorasim::hw
