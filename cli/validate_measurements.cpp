#include "cli/validate_measurements.h"

#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "calibrate/compare.h"
#include "calibrate/measurement_io.h"
#include "calibrate/measurement_label.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/split_charts.h"
#include "model/error.h"
#include "simulator/simulate.h"

namespace lorasim::cli {
namespace {

// A CSV field in double quotes, inner quotes doubled (RFC 4180).
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

namespace {
bool measured_time(const calib::ComparedSplit& c) { return !c.measured_oom && calib::measured(c.measured_step_time_s); }
}  // namespace

nlohmann::json time_range_coverage_json(const calib::ComparisonSummary& s) {
  return s.time_range_points ? nlohmann::json(static_cast<double>(s.time_range_hits) / s.time_range_points)
                             : nlohmann::json(nullptr);
}

std::string time_range_line(const calib::ComparisonSummary& s) {
  return "step time within the predicted range: " + std::to_string(s.time_range_hits) + " of " +
         std::to_string(s.time_range_points) + " splits (" +
         fixed(s.time_range_points ? 100.0 * s.time_range_hits / s.time_range_points : 0.0, 0) + "%)\n";
}

nlohmann::json measured_json(double v) { return calib::measured(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json compared_split_json(const calib::ComparedSplit& c) {
  return {{"micro_batch", c.micro_batch},
          {"accumulation", c.accumulation},
          {"predicted_step_time_s", c.predicted_step_time_s},
          {"predicted_step_time_low_s", c.predicted_step_time_low_s},
          {"predicted_step_time_high_s", c.predicted_step_time_high_s},
          {"measured_step_time_s", measured_json(c.measured_step_time_s)},
          {"step_time_error", measured_json(c.step_time_error())},
          {"within_range", measured_time(c) ? nlohmann::json(c.within_range()) : nlohmann::json(nullptr)},
          {"predicted_peak_reserved_bytes", c.predicted_reserved_bytes},
          {"measured_peak_reserved_bytes", measured_json(c.measured_reserved_bytes)},
          {"reserved_error", measured_json(c.reserved_error())},
          {"predicted_worst_reserved_bytes", c.predicted_worst_reserved_bytes},
          {"predicted_fits", c.predicted_fits},
          {"measured_oom", c.measured_oom}};
}

namespace {

// Rows with a histogram of widths group by their collation rather than seq_len (their largest
// width, which differs between splits of one data set).
std::string group_key(const calib::Measurement& m) {
  std::string k = calib::workload_label(m);
  if (m.processes > 1) k += " gpus=" + std::to_string(m.processes);  // a data-parallel run is its own group
  if (m.padded_lengths.empty()) return k;
  const std::string s = " s=" + std::to_string(m.workload.train.seq_len) + " ";
  const size_t at = k.find(s);
  if (at != std::string::npos)
    k.replace(at, s.size(), " padding=" + (m.collation.empty() ? std::string("recorded") : m.collation) + " ");
  return k;
}

// What a row's prediction came from: its sequence length, --lengths, or its own histogram.
const char* predicted_from(const calib::Measurement& m, const LengthsArgs* lengths) {
  if (!m.padded_lengths.empty()) return "padded_lengths";
  return lengths ? "lengths_file" : "seq_len";
}

}  // namespace

int validate_measurements(const std::string& path, const hw::Profile& profile, Format format,
                          int64_t memory_limit_bytes, double safety_margin, const std::string& plot_path,
                          const LengthsArgs* lengths, std::optional<model::Link> link, bool fsdp) {
  const std::vector<calib::Measurement> rows = calib::load_measurements(path);
  std::vector<std::string> order;
  std::map<std::string, std::vector<const calib::Measurement*>> groups;
  bool any_lengths = lengths != nullptr;
  for (const auto& m : rows) {
    const std::string k = group_key(m);
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(&m);
    any_lengths = any_lengths || !m.padded_lengths.empty();
  }
  std::vector<calib::ComparedSplit> all;
  std::vector<SplitChart> charts;
  nlohmann::json jgroups = nlohmann::json::array();
  std::vector<std::string> header = {"workload", "micro", "accum", "step pred", "step meas", "err",
                                     "reserved pred", "reserved meas", "err"};
  if (any_lengths) header.push_back("predicted from");
  Table t(header);
  double worst_regret = 0, worst_regret_any = 0;
  int recommended_oom = 0;
  for (const auto& k : order) {
    const auto& g = groups[k];
    sim::Request req;
    req.workload = g.front()->workload;
    req.hardware = profile.hw;
    // A data-parallel row's micro_batch and accumulation are each process's (docs/measurements.md).
    req.gpus = g.front()->processes;
    req.link = link;
    req.fsdp = fsdp && req.gpus > 1;  // --fsdp says how the rows of several processes ran
    req.effective_batch = g.front()->micro_batch * g.front()->accumulation * req.gpus;
    req.memory_limit_bytes = memory_limit_bytes;
    req.safety_margin = safety_margin;
    const auto predict = [&](const std::function<sim::Result()>& run) {
      try {
        return run();
      } catch (const InputError& e) {
        // The workload is the file's, not a flag's: no --precision to point at (validate refuses
        // it beside --measurements), so say what the file or the profile can change.
        if (e.quantity() == "precision")
          throw InputError(path + ": the runs " + k + ": " + e.what() +
                           ": give the runs' precision in a precision column (docs/measurements.md), or "
                           "compare them with a profile of the GPU they ran on (--gpu or --profile)");
        // Another value of the rows (a LoRA rank, ...): the file's, not the flag of that name.
        if (!e.quantity().empty()) throw InputError(path + ": the runs " + k + ": " + e.what());
        throw;
      }
    };
    // The group's prediction for rows without a histogram: of their seq_len, or of --lengths.
    std::optional<sim::Result> group_pred;
    const auto group_prediction = [&]() -> const sim::Result& {
      if (!group_pred)
        group_pred = predict([&] {
          if (!lengths) return sim::simulate(req);
          sim::Request lr = req;
          apply_lengths(*lengths, lr.workload);
          return sim::simulate_lengths(lr, lengths_options(*lengths)).result;
        });
      return *group_pred;
    };
    std::optional<sim::Result> pred;  // the last prediction, for the chart's limits
    std::vector<calib::ComparedSplit> cs;
    std::vector<std::string> froms;  // parallel to cs
    for (const calib::Measurement* m : g) {
      if (m->padded_lengths.empty()) pred = group_prediction();
      else pred = predict([&] { return sim::simulate_measured_widths(
                             req, m->micro_batch, m->padded_lengths,
                             calib::measured(m->new_shapes_per_step) ? m->new_shapes_per_step : 0.0); });
      const calib::ComparedSplit c = calib::compare_split(*pred, *m);
      const char* from = predicted_from(*m, lengths);
      cs.push_back(c);
      all.push_back(c);
      const bool ok = !c.measured_oom;
      const bool mem = ok && calib::measured(c.measured_reserved_bytes);
      std::vector<std::string> cells = {
          k, std::to_string(c.micro_batch), std::to_string(c.accumulation), human_seconds(c.predicted_step_time_s),
          ok ? human_seconds(c.measured_step_time_s) : "OOM", ok ? fixed(100 * c.step_time_error(), 1) + "%" : "-",
          human_bytes(c.predicted_reserved_bytes), mem ? human_bytes(c.measured_reserved_bytes) : "-",
          mem ? fixed(100 * c.reserved_error(), 1) + "%" : "-"};
      if (any_lengths) cells.push_back(from);
      t.add(cells);
      froms.push_back(from);
    }
    const calib::ComparisonSummary s = calib::summarize(cs);
    charts.push_back(comparison_chart(req.workload, req.effective_batch, profile, *pred, cs, "measured in " + path));
    worst_regret = std::max(worst_regret, s.regret);
    worst_regret_any = std::max(worst_regret_any, s.regret_any);
    recommended_oom += s.recommended_oom ? 1 : 0;
    nlohmann::json jg = {{"workload", k}, {"stack", stack_json(req.workload.stack)}, {"regret", s.regret}, {"regret_any", s.regret_any}, {"recommended_oom", s.recommended_oom},
                         {"recommended_was_fastest", s.recommended_was_fastest}, {"splits", nlohmann::json::array()}};
    for (size_t i = 0; i < cs.size(); ++i) {
      nlohmann::json js = compared_split_json(cs[i]);
      if (any_lengths) js["predicted_from"] = froms[i];
      jg["splits"].push_back(js);
    }
    jgroups.push_back(jg);
  }
  const calib::ComparisonSummary total = calib::summarize(all);
  if (!plot_path.empty()) write_svg(charts, plot_path);
  if (format == Format::json) {
    nlohmann::json j = {{"profile", profile_json(profile)}, {"measurements", path}, {"groups", jgroups}};
    j["summary"] = {{"points", total.points},
                    {"time_mean_abs_err", total.time_mean_abs_err},
                    {"time_max_abs_err", total.time_max_abs_err},
                    {"mem_mean_abs_err", total.reserved_mean_abs_err},
                    {"mem_max_abs_err", total.reserved_max_abs_err},
                    {"mem_max_under_err", total.reserved_max_under_err},
                    {"mem_max_under_err_worst_case", total.worst_reserved_max_under_err},
                    {"time_range_coverage", time_range_coverage_json(total)},
                    {"regret_max", worst_regret},
                    {"regret_any_max", worst_regret_any},
                    {"recommended_oom", recommended_oom}};
    std::cout << j.dump(2) << "\n";
    return kOk;
  }
  if (format == Format::csv) {
    std::cout << "workload,micro_batch,accumulation,predicted_step_time_s,measured_step_time_s,step_time_error,"
                 "predicted_peak_reserved_bytes,measured_peak_reserved_bytes,reserved_error,"
                 "predicted_worst_reserved_bytes,predicted_step_time_low_s,predicted_step_time_high_s"
              << (any_lengths ? ",predicted_from\n" : "\n");
    // The workload label lists the LoRA targets with commas: quoted, as RFC 4180 has it.
    for (const auto& jg : jgroups)
      for (const auto& s : jg["splits"]) {
        std::cout << quoted(jg["workload"].get<std::string>()) << ',' << s["micro_batch"] << ',' << s["accumulation"]
                  << ',' << s["predicted_step_time_s"] << ',' << s["measured_step_time_s"] << ','
                  << s["step_time_error"] << ',' << s["predicted_peak_reserved_bytes"] << ','
                  << s["measured_peak_reserved_bytes"] << ',' << s["reserved_error"] << ','
                  << s["predicted_worst_reserved_bytes"] << ',' << s["predicted_step_time_low_s"] << ','
                  << s["predicted_step_time_high_s"];
        if (any_lengths) std::cout << ',' << s["predicted_from"].get<std::string>();
        std::cout << '\n';
      }
    return kOk;
  }
  std::cout << "profile:  " << profile_line(profile) << "\nmeasured: " << path << " (" << rows.size() << " runs, "
            << order.size() << " workloads)\n\n";
  t.print(std::cout);
  std::cout << "\nstep time:     mean |err| " << fixed(100 * total.time_mean_abs_err, 1) << "%, max "
            << fixed(100 * total.time_max_abs_err, 1) << "% over " << total.points << " runs\n";
  if (total.memory_points)
    std::cout << "peak reserved: mean |err| " << fixed(100 * total.reserved_mean_abs_err, 1) << "%, max "
              << fixed(100 * total.reserved_max_abs_err, 1) << "%, largest under-prediction "
              << fixed(100 * total.reserved_max_under_err, 1) << "% (of the worst case that decides fits: "
              << fixed(100 * total.worst_reserved_max_under_err, 1) << "%)\n";
  if (total.time_range_points) std::cout << time_range_line(total);
  std::cout << "recommendation: worst regret " << fixed(100 * worst_regret, 1) << "% over " << order.size()
            << " workloads, " << recommended_oom << " recommended splits ran out of memory\n";
  if (worst_regret_any > worst_regret)
    std::cout << "                (regret is against the fastest split whose measured peak left the "
              << fixed(100 * safety_margin, 0) << "% safety margin free; against the fastest that ran it is "
              << fixed(100 * worst_regret_any, 1) << "%)\n";
  return kOk;
}

}  // namespace lorasim::cli
