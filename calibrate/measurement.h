// One measured training configuration: the workload, the split, and what was measured.
// Produced by the runner (calibrate/runner.h) or read from a user's measurement file;
// consumed by the fitter and by validation. Torch-free.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/padded_widths.h"
#include "model/workload.h"

namespace lorasim::calib {

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
inline bool measured(double v) { return !std::isnan(v); }

struct Measurement {
  model::Workload workload;                 ///< architecture (possibly truncated), LoRA, training
  int64_t micro_batch = 1;
  int64_t accumulation = 1;
  bool oom = false;                         ///< ran out of memory: no figures below
  double step_time_s = kNotMeasured;        ///< whole optimizer step
  double micro_batch_time_s = kNotMeasured; ///< one micro-batch in steady state
  double host_time_s = kNotMeasured;        ///< host dispatch of one micro-batch (device held busy)
  double device_time_s = kNotMeasured;      ///< device execution of one micro-batch
  double optimizer_time_s = kNotMeasured;   ///< AdamW step + zero_grad
  double peak_allocated_bytes = kNotMeasured;
  double peak_reserved_bytes = kNotMeasured;
  std::string loop;  ///< what produced the row: "trainer", "plain", "probe"; empty when not said
  // What describes the run rather than its workload (calibrate/measurement_run.h); empty, NaN
  // or the default where the row does not say.
  std::string device;                        ///< torch.cuda.get_device_name() or "cpu"
  double device_memory_bytes = kNotMeasured; ///< the device's total memory (physical RAM for the CPU)
  int64_t processes = 1;                     ///< training processes (WORLD_SIZE)
  std::string collation;                     ///< fixed, longest, multiple:N, max_length, packed, padding-free
  model::PaddedWidths padded_lengths;        ///< the timed micro-batches per padded width, ascending
  double real_tokens = kNotMeasured;         ///< mean non-pad tokens per timed micro-batch
  /// Micro-batches per timed step whose padded shape the process had not run before (each pays
  /// the kernel choice for a new shape once: profile row new_shape_s).
  double new_shapes_per_step = kNotMeasured;
  std::string model_config_sha256;           ///< SHA-256 of the config file `model` names
};

}  // namespace lorasim::calib
