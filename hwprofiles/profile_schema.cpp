// The profile schema and its range checks (docs/profile-schema.md). The [time] and [memory]
// keys, their order and their ranges are the coefficient table's (model/coefficients.h):
// a coefficient added there is read, checked and written here without a change.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "hwprofiles/profile_schema.h"
#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::hw {
namespace detail {
namespace {

using HW = model::HardwareModel;
using model::Range;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

NumberField own(const char* section, const char* key, Range range, double* (*field)(HW&)) {
  return {section, key, range, false, false, field, -1, nullptr};
}

NumberField stored(const model::StoredValue& v, int slot) {
  const std::string_view key = v.row->name;
  const std::string section = v.entry().section;
  const bool stack_section = starts_with(section, "stack.");
  // Byte counts as integers in [memory]; a stack's section writes every number as a float.
  const bool bytes = !stack_section && key.size() > 6 && key.substr(key.size() - 6) == "_bytes";
  return {section, v.row->name, v.entry().range, bytes, v.entry().optional || stack_section, nullptr, slot, &v};
}

}  // namespace

// Built again when the table grows (a row added by a test is schema too).
const std::vector<NumberField>& number_fields() {
  static std::vector<NumberField> fields;
  static size_t built_for = static_cast<size_t>(-1);
  const auto& values = model::stored_values();
  if (built_for != values.size()) {
    fields = {
        own("gpu", "peak_bf16_tflops", Range::non_negative, [](HW& h) { return &h.peak_bf16_tflops; }),
        own("gpu", "peak_fp16_tflops", Range::non_negative, [](HW& h) { return &h.peak_fp16_tflops; }),
        own("gpu", "peak_fp32_tflops", Range::non_negative, [](HW& h) { return &h.peak_fp32_tflops; }),
        own("gpu", "hbm_bandwidth_gbps", Range::non_negative, [](HW& h) { return &h.hbm_bandwidth_gbps; }),
    };
    for (size_t i = 0; i < values.size(); ++i) fields.push_back(stored(values[i], static_cast<int>(i)));
    built_for = values.size();
  }
  return fields;
}

const std::vector<StackSection>& stack_sections() {
  static std::vector<StackSection> sections;
  static size_t built_for = static_cast<size_t>(-1);
  if (built_for != model::stored_values().size()) {
    sections.clear();
    for (const model::StoredValue& v : model::stored_values()) {
      const std::string s = v.entry().section;
      if (!starts_with(s, "stack.")) continue;
      bool seen = false;
      for (const StackSection& k : sections) seen = seen || k.section == s;
      if (!seen) sections.push_back({s, v.stack});
    }
    built_for = model::stored_values().size();
  }
  return sections;
}

bool writes_stack_section(const model::HardwareModel& hw, const StackSection& s) {
  const model::StackOrigin& o = hw.origin(s.stack);
  // A stack that reads its base's values holds none to write.
  if (!o.has_values && model::training_stack(s.stack).base_stack()) return false;
  if (o.calibrated || o.source != model::StackOrigin{}.source) return true;
  model::HardwareModel copy = hw;
  for (const NumberField& f : number_fields())
    if (f.section == s.section && f.of(copy) != f.stored->entry().prior) return true;
  return false;
}

const std::vector<std::string> kGpuOtherKeys = {"name", "display_name", "memory_bytes",
                                                "bf16_supported", "compute_capability"};
const std::vector<std::string> kProfileOtherKeys = {"calibrated", "coefficients_precision",
                                                    "overlap", "source"};
const std::vector<std::string> kTopLevelKeys = {"schema_version", "gpu",   "profile",     "time",
                                                "memory",         "stack", "interconnect", "calibration"};
const std::vector<std::string> kInterconnectKeys = {"link", "allreduce_gbps", "allreduce_latency_s", "calibrated",
                                                    "source"};
const std::vector<std::string> kStackOtherKeys = {"calibrated", "source"};

std::vector<std::string> known_keys(const std::string& section) {
  std::vector<std::string> keys;
  if (section == "gpu") keys = kGpuOtherKeys;
  if (section == "profile") keys = kProfileOtherKeys;
  if (starts_with(section, "stack.")) keys = kStackOtherKeys;
  if (section == "interconnect") keys = kInterconnectKeys;
  for (const auto& f : number_fields())
    if (section == f.section) keys.emplace_back(f.key);
  return keys;
}

std::string key_path(const std::string& section, const std::string& key) {
  return section.empty() ? key : "[" + section + "]." + key;
}


namespace {
// Rates up to a thousand times the fit's "no cost" rate, so that an anchored scale of one stays
// writable; beyond it a term is a rounding error and the value a typo.
constexpr double kMaxRate = 1e3 * model::kNoCostRate;
// No device has more memory; INT64_MAX is a typo (and overflows the limits computed from it).
constexpr int64_t kMaxMemoryBytes = int64_t{1} << 46;

[[noreturn]] void fail(const Locator& where, const std::string& path, const std::string& what) {
  throw ConfigError(where(path) + path + " " + what);
}
}  // namespace

void check_ranges(const Profile& p, const Locator& where) {
  if (p.schema_version != kSchemaVersion)
    fail(where, "schema_version", "must be " + std::to_string(kSchemaVersion) + " (got " +
                                      std::to_string(p.schema_version) + ")");
  if (p.hw.name.empty()) fail(where, "[gpu].name", "must not be empty");
  if (p.hw.display_name.empty()) fail(where, "[gpu].display_name", "must not be empty");
  if (p.hw.memory_bytes <= 0)
    fail(where, "[gpu].memory_bytes",
         "must be > 0 (got " + std::to_string(p.hw.memory_bytes) + ")");
  if (p.hw.memory_bytes > kMaxMemoryBytes)
    fail(where, "[gpu].memory_bytes",
         "must be at most 64 TiB (" + std::to_string(kMaxMemoryBytes) + "), beyond any device's memory (got " +
             std::to_string(p.hw.memory_bytes) + ")");

  HW hw = p.hw;  // the accessors hand out mutable pointers; a copy keeps `p` const
  for (const auto& f : number_fields()) {
    const double v = f.of(hw);
    const std::string path = key_path(f.section, f.key);
    const std::string got = " (got " + format_double(v) + ")";
    // Written as negations so that NaN fails every test, with the range's own message: nan and
    // 4.9e-324 are out of a rate's range alike. Infinity passes the one-sided ranges.
    switch (f.range) {
      case Range::positive:
        if (!(v > 0)) fail(where, path, "must be > 0" + got);
        break;
      case Range::rate:
        if (!(v >= model::kMinRate && v <= kMaxRate))
          fail(where, path, "must be a rate in [" + format_double(model::kMinRate) + ", " + format_double(kMaxRate) +
                                "] (a rate outside it is a typo, not a device)" + got);
        break;
      case Range::non_negative:
        if (!(v >= 0)) fail(where, path, "must be >= 0" + got);
        break;
      case Range::bytes:
        if (!(v >= 0)) fail(where, path, "must be >= 0" + got);
        if (!(v <= model::kMaxBytes))
          fail(where, path, "must be at most 1 PiB (" + format_double(model::kMaxBytes) + " bytes)" + got);
        break;
      case Range::share:
        if (!(v >= 0 && v <= 1)) fail(where, path, "must be a share in [0, 1]" + got);
        break;
      case Range::fraction:
        if (!(v >= 0)) fail(where, path, "must be >= 0" + got);
        if (!(v < 1)) fail(where, path, "must be a fraction in [0, 1), e.g. 0.2 for 20%" + got);
        break;
      case Range::relative_error:
        if (!(v >= 0 && v <= 10))
          fail(where, path, "must be a fraction in [0, 10], e.g. 0.15 for 15%" + got);
        break;
    }
    if (!std::isfinite(v)) fail(where, path, "must be a finite number" + got);
  }
  if (p.hw.interconnect) {
    const model::Interconnect& ic = *p.hw.interconnect;
    // A bus bandwidth above 100 TB/s or a step latency of a second or more is a typo, not a link.
    if (!(ic.allreduce_gbps > 0 && ic.allreduce_gbps <= 1e5))
      fail(where, "[interconnect].allreduce_gbps",
           "must be a bus bandwidth in GB/s in (0, 100000] (got " + format_double(ic.allreduce_gbps) + ")");
    if (!(ic.allreduce_latency_s >= 0 && ic.allreduce_latency_s < 1))
      fail(where, "[interconnect].allreduce_latency_s",
           "must be a latency in seconds in [0, 1) (got " + format_double(ic.allreduce_latency_s) + ")");
  }
  // Coefficients fitted in bf16 on a device without bf16 cannot describe any run on it.
  if (!p.hw.bf16_supported && p.hw.coefficients_precision == model::Precision::bf16)
    fail(where, "[profile].coefficients_precision",
         "is \"bf16\" but [gpu].bf16_supported = false; use \"fp16\" or \"fp32\"");
}

}  // namespace detail

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

namespace {
bool same_origins(const model::HardwareModel& a, const model::HardwareModel& b) {
  for (size_t i = 0; i < std::max(a.origins.size(), b.origins.size()); ++i) {
    const model::StackKind k{static_cast<int>(i)};
    if (a.origin(k).calibrated != b.origin(k).calibrated || a.origin(k).source != b.origin(k).source ||
        a.origin(k).inherited != b.origin(k).inherited)
      return false;
  }
  return true;
}
}  // namespace

bool operator==(const Profile& a, const Profile& b) {
  const model::HardwareModel& x = a.hw;
  const model::HardwareModel& y = b.hw;
  model::HardwareModel xc = x, yc = y;
  for (const auto& f : detail::number_fields())
    if (f.of(xc) != f.of(yc)) return false;
  return a.schema_version == b.schema_version && a.source_text_name == b.source_text_name &&
         a.origin_source == b.origin_source && a.calibration == b.calibration &&
         x.name == y.name && x.display_name == y.display_name &&
         x.memory_bytes == y.memory_bytes && x.bf16_supported == y.bf16_supported &&
         x.compute_capability_major == y.compute_capability_major &&
         x.compute_capability_minor == y.compute_capability_minor &&
         x.coefficients_precision == y.coefficients_precision && x.overlap == y.overlap &&
         x.calibrated == y.calibrated && same_origins(x, y) && x.interconnect == y.interconnect;
}

bool operator!=(const Profile& a, const Profile& b) { return !(a == b); }

void validate_profile(const Profile& profile) {
  const std::string prefix = (profile.source_text_name.empty()
                                  ? "profile '" + profile.hw.name + "'"
                                  : profile.source_text_name) +
                             ": ";
  detail::check_ranges(profile, [&prefix](const std::string&) { return prefix; });
}

}  // namespace lorasim::hw
