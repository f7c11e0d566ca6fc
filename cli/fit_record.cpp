#include "cli/fit_record.h"

#include <cstdio>

#include "calibrate/convert.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "model/stack.h"
#include "model/training_stack.h"

namespace lorasim::cli {
namespace {

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string signed_percent(double rel) { return (rel >= 0 ? "+" : "") + fixed(100 * rel, 0) + "%"; }

}  // namespace

void record_fit(hw::Profile& profile, const calib::FitReport& rep, const FitRecord& record) {
  profile.hw = rep.hardware;
  calib::set_expected_errors(profile.hw, rep);
  if (!model::training_stack(rep.stack).calibrates_device()) {
    // The GPU half and its provenance are the base's; the stack's terms are this fit's.
    profile.hw.origin(rep.stack).source = record.source;
  } else {
    profile.origin_source = record.source;
    profile.calibration = {};
  }
  auto set = [&](const std::string& key, hw::CalibrationValue v) {
    profile.calibration.set(record.key_prefix + key, std::move(v));
  };
  for (const auto& [key, value] : record.facts) set(key, value);
  set("time_rms_rel", rep.time_rms_rel);
  set("time_max_rel", rep.time_max_rel);
  set("reserved_rms_rel", rep.reserved_rms_rel);
  set("fit", std::string(rep.anchored ? "anchored" : "full"));
  set("base", record.base);
  set("stack", std::string(model::stack_name(rep.stack)));
  for (const calib::GroupScale& g : rep.scales)
    if (g.identified) set(g.group + "_scale", g.scale);
  std::string moved;
  for (const calib::MovedCoefficient& m : rep.moved) moved += (moved.empty() ? "" : " ") + m.name;
  if (!moved.empty()) set("moved", moved);
}

void print_fit(std::ostream& out, const calib::FitReport& rep, const std::string& base) {
  print_residuals(out, rep.residuals);
  out << "\nfit over " << rep.time_points << " runs: step time rms " << fixed(100 * rep.time_rms_rel, 1) << "%, max "
      << fixed(100 * rep.time_max_rel, 1) << "%";
  if (rep.memory_points)
    out << "; peak reserved rms " << fixed(100 * rep.reserved_rms_rel, 1) << "%, max "
        << fixed(100 * rep.reserved_max_rel, 1) << "%";
  out << "\n" << (rep.anchored ? "anchored on " : "refitted from ") << base << "; the rows moved "
      << (rep.moved.empty() ? "nothing" : std::to_string(rep.moved.size()) + " coefficients:") << "\n";
  for (const calib::MovedCoefficient& m : rep.moved)
    out << "  " << m.name << " " << scientific(m.before) << " -> " << scientific(m.after)
        << (m.before != 0 ? " (" + signed_percent(m.after / m.before - 1) + ")" : "") << "\n";
  for (const calib::GroupScale& g : rep.scales)
    out << "  " << g.group << (g.identified ? " x" + fixed(g.scale, 3) : " kept") << ": " << g.why << "\n";
  for (const std::string& n : rep.shape_notes) out << "  " << n << "\n";
}

}  // namespace lorasim::cli
