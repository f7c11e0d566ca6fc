// Writing a profile: to_toml in schema order, with doubles in their shortest exact form,
// and write_profile_file.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "hwprofiles/profile_schema.h"
#include "model/atomic_file.h"
#include "model/error.h"
#include "model/workload.h"

namespace lorasim::hw {

namespace detail {

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

}  // namespace detail

namespace {

using namespace detail;

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
  model::HardwareModel hw = p.hw;
  for (const auto& f : number_fields()) {
    if (section != f.section) continue;
    if (f.stored && hw.origin(f.stored->stack).inherited.count(f.key)) continue;  // the base's, read again
    const double v = f.of(hw);
    os << f.key << " = " << (f.bytes ? format_bytes(v) : format_double(v)) << "\n";
  }
}



}  // namespace

std::string to_toml(const Profile& p) {
  const model::HardwareModel& hw = p.hw;
  std::ostringstream os;
  os << "# lorasim hardware profile: " << hw.display_name << ". Schema: docs/profile-schema.md.\n"
     << "schema_version = " << p.schema_version << "\n\n";

  os << "[gpu]\n"
     << "name = " << quote(hw.name) << "\n"
     << "display_name = " << quote(hw.display_name) << "\n"
     << "memory_bytes = " << hw.memory_bytes << "\n"
     << "bf16_supported = " << (hw.bf16_supported ? "true" : "false") << "\n";
  if (!model::compute_capability(hw).empty()) os << "compute_capability = " << quote(model::compute_capability(hw)) << "\n";
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
  for (const StackSection& s : stack_sections()) {
    if (!writes_stack_section(hw, s)) continue;
    const model::StackOrigin& origin = hw.origin(s.stack);
    os << "\n[" << s.section << "]\n"
       << "calibrated = " << (origin.calibrated ? "true" : "false") << "\n"
       << "source = " << quote(origin.source) << "\n";
    write_numbers(os, p, s.section);
  }

  if (hw.interconnect) {
    os << "\n[interconnect]\n"
       << "link = " << quote(model::link_name(hw.interconnect->link)) << "\n"
       << "allreduce_gbps = " << format_double(hw.interconnect->allreduce_gbps) << "\n"
       << "allreduce_latency_s = " << format_double(hw.interconnect->allreduce_latency_s) << "\n";
    if (hw.interconnect->calibrated || !hw.interconnect->source.empty())
      os << "calibrated = " << (hw.interconnect->calibrated ? "true" : "false") << "\n"
         << "source = " << quote(hw.interconnect->source) << "\n";
  }

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
