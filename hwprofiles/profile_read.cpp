// Reading a profile: TOML in, a validated Profile out, every message naming the file, line,
// column and key (docs/profile-schema.md).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <toml++/toml.h>

#include "hwprofiles/profile_schema.h"
#include "model/bounded_read.h"
#include "model/error.h"
#include "model/training_stack.h"
#include "model/workload.h"

namespace lorasim::hw {
namespace {

// "8.0" -> 8, 0: digits, one dot, one or two digits (CUDA's capabilities run 1.0 to 12.x).
bool parse_compute_capability(const std::string& text, int& major, int& minor) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 2 || text.size() - dot - 1 < 1 || text.size() - dot - 1 > 2)
    return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (i != dot && (text[i] < '0' || text[i] > '9')) return false;
  major = std::stoi(text.substr(0, dot));
  minor = std::stoi(text.substr(dot + 1));
  return major >= 1;
}

using namespace detail;

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
      std::string msg = "unknown key " + excerpt(key_path(section, k), 120);
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

}  // namespace

Profile parse_profile(std::string_view toml_text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& pos = e.source().begin;
    throw ConfigError(source_name + ":" + std::to_string(pos.line) + ":" +
                      std::to_string(pos.column) + ": " + excerpt(std::string(e.description())));
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
  // Optional: profiles written before it, and GPUs no datasheet names, leave it unknown.
  if (const toml::node* cc = gpu.get("compute_capability")) {
    const std::string text = r.string(gpu, "gpu", "compute_capability");
    int major = 0, minor = 0;
    if (!parse_compute_capability(text, major, minor))
      r.fail_at(*cc, "[gpu].compute_capability must be \"MAJOR.MINOR\" as CUDA reports it, such as \"8.0\" or "
                     "\"7.5\" (got \"" + text + "\")");
    p.hw.compute_capability_major = major;
    p.hw.compute_capability_minor = minor;
  }

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
  std::map<std::string, const toml::table*> tables = {
      {"gpu", &gpu}, {"profile", &prof}, {"time", &time}, {"memory", &memory}};

  // The stacks' own sections, [stack.NAME]: optional, every key too (the table's priors stand in).
  if (const toml::node* st = root.get("stack")) {
    const toml::table* t = st->as_table();
    if (!t) r.fail_at(*st, "stack must be a table ([stack.hf-peft]), got " + type_name(*st));
    std::vector<std::string> names;
    for (const StackSection& s : stack_sections()) names.push_back(s.section.substr(6));
    r.reject_unknown_keys(*t, "stack", names);
    for (const StackSection& s : stack_sections()) {
      const toml::node* n = t->get(s.section.substr(6));
      if (!n) continue;
      const toml::table* h = n->as_table();
      if (!h) r.fail_at(*n, s.section + " must be a table ([" + s.section + "]), got " + type_name(*n));
      r.reject_unknown_keys(*h, s.section, known_keys(s.section));
      model::StackOrigin& origin = p.hw.origin(s.stack);
      origin.has_values = true;  // its keys, or the table's priors where it lacks one
      if (h->get("calibrated")) origin.calibrated = r.boolean(*h, s.section, "calibrated");
      if (h->get("source")) origin.source = r.string(*h, s.section, "source");
      tables[s.section] = h;
    }
  }
  for (const auto& f : number_fields()) {
    const auto t = tables.find(f.section);
    if (f.optional && (t == tables.end() || !t->second->get(f.key))) continue;
    f.of(p.hw) = r.number(*t->second, f.section, f.key);
  }
  // A section of a stack with a base (lightning) that does not set one of its rows reads the
  // base's value for it, as the stack does without a section: not the table's prior.
  for (const StackSection& s : stack_sections()) {
    const auto t = tables.find(s.section);
    if (t == tables.end() || !model::training_stack(s.stack).base_stack()) continue;
    for (const model::Coefficient& row : model::coefficient_table())
      if (row.field && row.owned_by(s.stack) && !t->second->get(row.name))
        p.hw.origin(s.stack).inherited.insert(row.name);
  }

  // Optional: a profile without it predicts data-parallel runs from its link kind's prior.
  if (const toml::node* ic = root.get("interconnect")) {
    const toml::table* t = ic->as_table();
    if (!t) r.fail_at(*ic, "interconnect must be a table ([interconnect]), got " + type_name(*ic));
    r.reject_unknown_keys(*t, "interconnect", kInterconnectKeys);
    model::Interconnect link;
    link.link = model::parse_link(r.choice(*t, "interconnect", "link", {"nvlink", "pcie", "gloo-cpu"}));
    link.allreduce_gbps = r.number(*t, "interconnect", "allreduce_gbps");
    link.allreduce_latency_s = r.number(*t, "interconnect", "allreduce_latency_s");
    if (t->get("calibrated")) link.calibrated = r.boolean(*t, "interconnect", "calibrated");
    if (t->get("source")) link.source = r.string(*t, "interconnect", "source");
    p.hw.interconnect = link;
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
    throw ConfigError("cannot read profile '" + path + "': " + std::strerror(errno), "profile");
  }
  std::error_code ec;
  // A directory opens but does not read.
  if (std::filesystem::is_directory(path, ec)) throw ConfigError("cannot read profile '" + path + "': not a readable file");
  const std::string text = model::read_bounded(in, path, "a profile");
  if (text.empty())
    throw ConfigError("profile '" + path + "' is empty (a profile starts with `schema_version = " +
                      std::to_string(kSchemaVersion) + "`; see docs/profile-schema.md)");
  return parse_profile(text, path);
}

}  // namespace lorasim::hw
