// Rows of measurement files matched to a simulation (cli/measured_rows.h).
#include "cli/measured_rows.h"

#include "calibrate/measurement_io.h"
#include "calibrate/measurement_label.h"

namespace lorasim::cli {

std::vector<sim::MeasuredSplit> measured_splits(const std::vector<std::string>& paths, const sim::Request& request,
                                                std::ostream& err) {
  calib::Measurement wanted;
  wanted.workload = request.workload;
  wanted.micro_batch = request.effective_batch;
  wanted.accumulation = 1;
  const std::string label = calib::workload_label(wanted);
  std::vector<sim::MeasuredSplit> out;
  for (const std::string& path : paths) {
    size_t ignored = 0;
    const std::vector<calib::Measurement> rows = calib::load_measurements(path);
    for (const calib::Measurement& m : rows) {
      if (calib::workload_label(m) != label) {
        ++ignored;
        continue;
      }
      sim::MeasuredSplit s;
      s.micro_batch = m.micro_batch;
      s.accumulation = m.accumulation;
      s.oom = m.oom;
      if (!m.oom) s.step_time_s = m.step_time_s;
      if (calib::measured(m.peak_reserved_bytes)) s.peak_reserved_bytes = m.peak_reserved_bytes;
      if (calib::measured(m.peak_allocated_bytes)) s.peak_allocated_bytes = m.peak_allocated_bytes;
      out.push_back(s);
    }
    if (ignored)
      err << "lorasim: --measured " << path << ": " << ignored << " of " << rows.size()
          << (rows.size() == 1 ? " row is" : " rows are") << " of another workload, effective batch or stack than "
          << label << ": ignored\n";
  }
  return out;
}

}  // namespace lorasim::cli
