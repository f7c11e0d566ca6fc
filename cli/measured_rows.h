// `--measured ROWS` on simulate and recommend: the rows of a measurement file that ran a split
// of the simulated workload, as the simulator's measured splits (simulator/measured_splits.h).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "hwprofiles/profile.h"
#include "simulator/simulate.h"

namespace lorasim::cli {

/// The rows of the files in `paths` (docs/measurements.md) whose workload, effective batch and
/// stack are `request`'s -- the grouping validate uses (calib::workload_label) -- as measured
/// splits; with `both_grad_ckpt` (--grad-ckpt auto) rows of either checkpointing setting, each
/// standing for its own setting's split. The other rows are counted on `err`, one line per file.
/// Throws ConfigError for a file load_measurements refuses, InputError for a file given twice
/// or rows of another device than `profile`'s (require_rows_of_profile) unless `allow_device_mismatch`.
std::vector<sim::MeasuredSplit> measured_splits(const std::vector<std::string>& paths, const sim::Request& request,
                                                const hw::Profile& profile, bool both_grad_ckpt,
                                                bool allow_device_mismatch, std::ostream& err);

}  // namespace lorasim::cli
