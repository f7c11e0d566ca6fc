// The profile schema and its range checks (docs/profile-schema.md). The [time] and [memory]
// keys, their order and their ranges are the coefficient table's (model/coefficients.h):
// a coefficient added there is read, checked and written here without a change.
#include <cmath>
#include <string_view>

#include "hwprofiles/profile_schema.h"
#include "model/error.h"

namespace lorasim::hw {
namespace detail {
namespace {

using HW = model::HardwareModel;
using model::Range;

NumberField own(const char* section, const char* key, Range range, double* (*field)(HW&)) {
  return {section, key, range, false, false, field, nullptr};
}

NumberField coefficient(const model::Coefficient& c) {
  const std::string_view key = c.name;
  const bool bytes = key.size() > 6 && key.substr(key.size() - 6) == "_bytes";
  // recompute_host_share came after the first profiles; without it they predicted share 1.
  const bool optional = key == "recompute_host_share";
  return {c.section(), c.name, c.range, bytes, optional, nullptr, &c};
}

}  // namespace

const std::vector<NumberField>& number_fields() {
  static const std::vector<NumberField> fields = [] {
    std::vector<NumberField> f = {
        own("gpu", "peak_bf16_tflops", Range::non_negative, [](HW& h) { return &h.peak_bf16_tflops; }),
        own("gpu", "peak_fp16_tflops", Range::non_negative, [](HW& h) { return &h.peak_fp16_tflops; }),
        own("gpu", "peak_fp32_tflops", Range::non_negative, [](HW& h) { return &h.peak_fp32_tflops; }),
        own("gpu", "hbm_bandwidth_gbps", Range::non_negative, [](HW& h) { return &h.hbm_bandwidth_gbps; }),
        own("profile", "expected_time_error", Range::relative_error, [](HW& h) { return &h.expected_time_error; }),
        own("profile", "expected_memory_error", Range::relative_error,
            [](HW& h) { return &h.expected_memory_error; }),
    };
    for (const model::Coefficient& c : model::coefficient_table()) f.push_back(coefficient(c));
    return f;
  }();
  return fields;
}

const std::vector<std::string> kGpuOtherKeys = {"name", "display_name", "memory_bytes",
                                                "bf16_supported"};
const std::vector<std::string> kProfileOtherKeys = {"calibrated", "coefficients_precision",
                                                    "overlap", "source"};
const std::vector<std::string> kTopLevelKeys = {"schema_version", "gpu",    "profile", "time",
                                                "memory",         "stack",  "calibration"};

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


namespace {
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

  HW hw = p.hw;  // the accessors hand out mutable pointers; a copy keeps `p` const
  for (const auto& f : number_fields()) {
    const double v = f.of(hw);
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
      case Range::share:
        if (!(v >= 0 && v <= 1)) fail(where, path, "must be a share in [0, 1]" + got);
        break;
      case Range::relative_error:
        if (!(v >= 0 && v <= 10))
          fail(where, path, "must be a fraction in [0, 10], e.g. 0.15 for 15%" + got);
        break;
    }
  }
  const model::StackTerms& st = p.hw.hf_peft;
  for (const model::StackTerm& t : model::stack_term_table()) {
    const double v = st.*t.field;
    const std::string path = key_path(kHfPeftSection, t.name);
    const std::string got = " (got " + format_double(v) + ")";
    if (!std::isfinite(v)) fail(where, path, "must be a finite number" + got);
    if (t.positive ? !(v > 0) : !(v >= 0)) fail(where, path, std::string(t.positive ? "must be > 0" : "must be >= 0") + got);
    if (t.fraction && !(v < 1)) fail(where, path, "must be a fraction in [0, 1), e.g. 0.2 for 20%" + got);
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

bool detail::writes_stack_terms(const model::StackTerms& t) {
  const model::StackTerms prior;
  if (t.calibrated || t.source != prior.source) return true;
  for (const model::StackTerm& k : model::stack_term_table())
    if (t.*k.field != prior.*k.field) return true;
  return false;
}

bool same_stack_terms(const model::StackTerms& a, const model::StackTerms& b) {
  for (const model::StackTerm& t : model::stack_term_table())
    if (a.*t.field != b.*t.field) return false;
  return a.calibrated == b.calibrated && a.source == b.source;
}

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
         x.coefficients_precision == y.coefficients_precision && x.overlap == y.overlap &&
         x.calibrated == y.calibrated && same_stack_terms(x.hf_peft, y.hf_peft);
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
