// `--measured ROWS` on simulate and recommend: the rows of a measurement file that ran a split
// of the simulated workload, as the simulator's measured splits (simulator/measured_splits.h).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "simulator/simulate.h"

namespace lorasim::cli {

/// The rows of the files in `paths` (docs/measurements.md) whose workload, effective batch and
/// stack are `request`'s -- the grouping validate uses (calib::workload_label) -- as measured
/// splits. The other rows are counted on `err`, one line per file. Throws ConfigError for a file
/// load_measurements refuses.
std::vector<sim::MeasuredSplit> measured_splits(const std::vector<std::string>& paths, const sim::Request& request,
                                                std::ostream& err);

}  // namespace lorasim::cli
