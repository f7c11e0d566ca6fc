// What one training run measured: the value the LibTorch runner (calibrate/runner.h) returns
// and calibrate/convert.h turns into a measurement row. It belongs to the measurement layer so
// that the conversion and the fit need neither the runner nor LibTorch. Torch-free.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/padded_widths.h"
#include "model/workload.h"

namespace lorasim::calib {

struct RunResult {
  int64_t micro_batch = 0, accumulation = 0, seq_len = 0, num_layers = 0;
  model::Precision precision = model::Precision::fp32;  ///< what the run trained in (see resolve_precision)
  bool oom = false;                  ///< out of memory: recorded, memory released, caller goes on
  std::string error;                 ///< the out-of-memory message when oom
  /// Full optimizer step (a micro-batches + AdamW + zero_grad): the timed steps' median, their
  /// mean where the widths varied (what a prediction from the widths gives, new shapes included).
  double step_time_s = 0;
  double micro_batch_time_s = 0;     ///< wall time of one micro-batch: median, or mean as step_time_s
  double host_time_s = std::numeric_limits<double>::quiet_NaN();    ///< median host dispatch time of one micro-batch (CUDA); NaN if not measured or unreliable
  double device_time_s = std::numeric_limits<double>::quiet_NaN();  ///< median device execution time of one micro-batch (CUDA); on CPU = micro_batch_time_s
  double optimizer_time_s = 0;       ///< median AdamW step + zero_grad
  int64_t peak_allocated_bytes = 0;  ///< peak over the warm-up and measured steps (from an empty cache), AdamW state included
  int64_t peak_reserved_bytes = 0;   ///< same, plus the caching allocator's slack (= allocated on CPU)
  std::vector<double> losses;        ///< loss of each optimizer step (sum over micro-batches of CE / a; data parallel: the ranks' mean)
  int64_t processes = 1;             ///< data-parallel ranks that trained it (Trainer::join); micro_batch is per rank
  // A run on data of many lengths (RunSpec::data_seed); seq_len is then the largest width timed.
  std::string collation;             ///< model::padding_name of the run's padding; empty: fixed lengths
  model::PaddedWidths padded_lengths;  ///< the padded width of every timed micro-batch
  double real_tokens = std::numeric_limits<double>::quiet_NaN();  ///< mean non-pad tokens per timed micro-batch
  /// Timed micro-batches per step whose (rows, width) shape the process had not trained a model of
  /// this kind on (calibrate/seen_shapes.h); 0 when the timed widths were one, NaN when oom.
  double new_shapes_per_step = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace lorasim::calib
