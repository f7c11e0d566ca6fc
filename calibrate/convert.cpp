// Measured run -> measurement row, and a fit's residuals -> a profile's expected errors (convert.h).
#include "calibrate/convert.h"

#include <cstdio>

#include "model/training_stack.h"

#include <algorithm>

namespace lorasim::calib {

Measurement to_measurement(const model::Workload& w, const RunResult& r) {
  Measurement m;
  m.workload = w;
  m.workload.train.precision = r.precision;  // what ran, which the CPU may have changed
  m.workload.stack = model::StackSpec::lorasim_runner();  // RunResult comes from lorasim's runner only
  m.micro_batch = r.micro_batch;
  m.accumulation = r.accumulation;
  m.processes = r.processes;
  m.oom = r.oom;
  if (!r.collation.empty()) {  // the row says what the tensors held (an out-of-memory: none), not the data's distribution
    m.workload.train.lengths.reset();
    m.workload.train.padding = model::Padding{};
    m.workload.train.seq_len = r.seq_len;
    m.collation = r.collation;
    m.padded_lengths = r.padded_lengths;
    m.real_tokens = r.real_tokens;
  } else {
    // The runner trains on fixed-length random tokens: one width, no padding.
    m.collation = "fixed";
    m.real_tokens = static_cast<double>(r.micro_batch) * static_cast<double>(w.train.seq_len);
  }
  if (r.oom) return m;
  m.step_time_s = r.step_time_s;
  m.micro_batch_time_s = r.micro_batch_time_s;
  m.host_time_s = r.host_time_s;
  m.device_time_s = r.device_time_s;
  m.optimizer_time_s = r.optimizer_time_s;
  m.new_shapes_per_step = r.new_shapes_per_step;
  m.peak_allocated_bytes = static_cast<double>(r.peak_allocated_bytes);
  m.peak_reserved_bytes = static_cast<double>(r.peak_reserved_bytes);
  return m;
}

void set_device(std::vector<Measurement>& rows, const std::string& device, bool is_gpu, double memory_bytes) {
  for (Measurement& m : rows) {
    m.device = is_gpu ? device : "cpu";
    m.device_memory_bytes = memory_bytes > 0 ? memory_bytes : kNotMeasured;
    m.processes = 1;
  }
}

std::string residual_warning(const FitReport& fit, bool on_cpu, int64_t measure_steps) {
  if (!(fit.time_rms_rel > kLargeTimeResidual)) return "";
  char head[160];
  std::snprintf(head, sizeof head, "the fit misses the measured step times by %.0f%% rms (max %.0f%%) over %d runs",
                100 * fit.time_rms_rel, 100 * fit.time_max_rel, fit.time_points);
  std::string cause = on_cpu ? "likely the CPU's threads: OMP/torch threads fighting over shared or busy cores "
                               "(set OMP_NUM_THREADS to the free physical cores and run nothing else)"
                             : "likely a busy host: another process on this GPU or its CPU cores";
  if (measure_steps > 0 && measure_steps < 5)
    cause += ", or too few timed steps (--steps " + std::to_string(measure_steps) + "; try 8 or more)";
  return std::string(head) + ": the timings were noisy, " + cause +
         "; the profile is written, its expected error raised to match: calibrate again when the machine is quiet";
}

void set_expected_errors(model::HardwareModel& hw, const FitReport& fit) {
  const double time = std::max(kMinExpectedTimeError, 2 * fit.time_rms_rel);
  const double memory = std::max(kMinExpectedMemoryError, 2 * fit.reserved_rms_rel);
  if (!model::training_stack(fit.stack).calibrates_device()) {  // the stack's rows were fitted, not the GPU's
    // A few runs refining a base cannot show the errors elsewhere: keep the base's when larger.
    double& t = hw.value("expected_time_error", fit.stack);
    double& m = hw.value("expected_memory_error", fit.stack);
    t = fit.anchored ? std::max(t, time) : time;
    m = fit.anchored ? std::max(m, memory) : memory;
    return;
  }
  hw.value("expected_time_error") = time;
  hw.value("expected_memory_error") = memory;
}

}  // namespace lorasim::calib
