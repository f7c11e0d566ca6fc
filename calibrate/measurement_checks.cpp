// Plausible figures and one run per split (see measurement_checks.h).
#include "calibrate/measurement_checks.h"

#include <cstdio>
#include <vector>

#include "calibrate/measurement_label.h"

namespace lorasim::calib {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string bytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double x = v;
  while (x >= 1024 && u < 6) x /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g %s", x, units[u]);
  return buf;
}

struct Figure {
  const char* column;
  double Measurement::*value;
  bool is_time;
};

const std::vector<Figure>& figures() {
  static const std::vector<Figure> all = {
      {"step_time_s", &Measurement::step_time_s, true},
      {"micro_batch_time_s", &Measurement::micro_batch_time_s, true},
      {"host_time_s", &Measurement::host_time_s, true},
      {"device_time_s", &Measurement::device_time_s, true},
      {"optimizer_time_s", &Measurement::optimizer_time_s, true},
      {"peak_allocated_bytes", &Measurement::peak_allocated_bytes, false},
      {"peak_reserved_bytes", &Measurement::peak_reserved_bytes, false},
  };
  return all;
}

bool same_figure(double a, double b) { return a == b || (!measured(a) && !measured(b)); }

std::string shown(const Figure& f, double v) {
  if (!measured(v)) return "not measured";
  return f.is_time ? number(v) + " s" : number(v) + " bytes";
}

// Everything that tells one run from another: the workload as simulated, the split and the
// loop that produced the row (a Trainer and a plain loop measure different things), and on data
// of many lengths the collation and the widths the run's micro-batches had.
std::string identity(const Measurement& m) {
  const auto& w = m.workload;
  const auto& s = w.stack;
  return w.arch.name + "|" + std::to_string(w.arch.num_layers) + "|" + std::to_string(w.train.seq_len) + "|" +
         std::to_string(m.micro_batch) + "|" + std::to_string(m.accumulation) + "|" + (w.train.grad_ckpt ? "c" : "") +
         "|" + std::to_string(w.lora.rank) + "|" + number(w.lora.alpha) + "|" + w.lora.targets_string() + "|" +
         model::precision_name(w.train.precision) + "|" + model::stack_name(s.kind) + "|" +
         model::attn_impl_name(s.attn_impl) + "|" + number(s.lora_dropout) + "|" + model::allocator_name(s.allocator) +
         "|" + (s.autocast ? "a" : "") + "|" + (s.fused_lm_head ? "f" : "") + "|" + m.loop + "|" + m.collation + "|" +
         model::format_padded_widths(m.padded_lengths);
}

}  // namespace

bool not_measured_cell(const std::string& cell) {
  std::string lower = cell;
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower.empty() || lower == "nan" || lower == "null";
}

std::string implausible_figures(const Measurement& m) {
  for (const Figure& f : figures()) {
    const double v = m.*f.value;
    if (!measured(v)) continue;
    const std::string col = std::string("column ") + f.column + ": ";
    if (v == 0)
      return col + (f.is_time ? "a measured time of 0 s" : "a measured peak of 0 bytes") +
             " is no measurement: leave the cell empty when it was not measured";
    if (f.is_time && v < kMinMeasuredTimeS)
      return col + number(v) + " s is below 1 µs: no part of a training step is that short (is the unit seconds?)";
    if (!f.is_time && v < kMinMeasuredPeakBytes)
      return col + number(v) + " bytes is below 64 KiB, less than any training run holds (is the unit bytes?)";
    if (f.is_time && v > kMaxMeasuredTimeS)
      return col + number(v) + " s is more than a day: not the time of a training step (is the unit seconds?)";
    if (!f.is_time && v > kMaxMeasuredPeakBytes)
      return col + bytes(v) + " is more than " + bytes(kMaxMeasuredPeakBytes) +
             ", more memory than one device has (is the unit bytes?)";
  }
  if (measured(m.peak_allocated_bytes) && measured(m.peak_reserved_bytes) &&
      m.peak_allocated_bytes > m.peak_reserved_bytes)
    return "column peak_allocated_bytes: " + bytes(m.peak_allocated_bytes) + " allocated is more than the " +
           bytes(m.peak_reserved_bytes) + " reserved (peak_reserved_bytes), and an allocator reserves at least "
           "what it hands out: are the two columns swapped?";
  return "";
}

std::string RowsBySplit::add(const Measurement& m, int64_t line) {
  const auto [it, inserted] = seen_.emplace(identity(m), std::make_pair(line, m));
  if (inserted) return "";
  const auto& [first_line, first] = it->second;
  const std::string run = run_label(m) + ", " + model::stack_name(m.workload.stack.kind) +
                          (m.loop.empty() ? "" : " " + m.loop);
  const std::string there = "line " + std::to_string(first_line);
  if (first.oom != m.oom)
    return "column oom: the same workload and split as " + there + " (" + run + ") ran out of memory in one row " +
           "and not in the other: keep one run of each split in a file";
  for (const Figure& f : figures())
    if (!same_figure(first.*f.value, m.*f.value))
      return std::string("column ") + f.column + ": the same workload and split as " + there + " (" + run +
             ") measured again, " + shown(f, first.*f.value) + " there and " + shown(f, m.*f.value) +
             " here: keep one run of each split in a file";
  return "repeats " + there + " (" + run + ") exactly: keep one (a repeated row would count twice in a fit)";
}

}  // namespace lorasim::calib
