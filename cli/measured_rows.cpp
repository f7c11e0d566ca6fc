// Rows of measurement files matched to a simulation (cli/measured_rows.h).
#include "cli/measured_rows.h"

#include "calibrate/measurement_io.h"
#include "calibrate/measurement_label.h"
#include "cli/output_path.h"
#include "cli/row_device.h"

namespace lorasim::cli {

std::vector<sim::MeasuredSplit> measured_splits(const std::vector<std::string>& paths, const sim::Request& request,
                                                const hw::Profile& profile, bool both_grad_ckpt,
                                                bool allow_device_mismatch, std::ostream& err) {
  // Under --grad-ckpt auto a row of either setting is of the workload, and stands for that setting's split.
  auto label_of = [&](bool grad_ckpt) {
    calib::Measurement wanted;
    wanted.workload = request.workload;
    wanted.workload.train.grad_ckpt = grad_ckpt;
    wanted.micro_batch = request.effective_batch;
    wanted.accumulation = 1;
    return calib::workload_label(wanted);
  };
  const bool own_ckpt = request.workload.train.grad_ckpt;
  const std::string label = label_of(own_ckpt), other = both_grad_ckpt ? label_of(!own_ckpt) : label;
  std::vector<FileArg> inputs;
  for (const std::string& path : paths) inputs.push_back({"--measured", path, ""});
  check_distinct_inputs(inputs);
  std::vector<sim::MeasuredSplit> out;
  for (const std::string& path : paths) {
    size_t ignored = 0;
    const std::vector<calib::Measurement> rows = calib::load_measurements(path);
    if (!allow_device_mismatch) require_rows_of_profile(rows, profile, "recommend --measured");
    for (const calib::Measurement& m : rows) {
      const std::string l = calib::workload_label(m);
      if (l != label && l != other) {
        ++ignored;
        continue;
      }
      sim::MeasuredSplit s;
      s.micro_batch = m.micro_batch;
      s.accumulation = m.accumulation;
      s.grad_ckpt = m.workload.train.grad_ckpt;
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
