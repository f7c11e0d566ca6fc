// The `--plot` charts of `simulate` and `validate`: a simulation, or predicted beside measured,
// turned into the plain data simulator/plot_svg.h draws.
#pragma once
#include <string>
#include <vector>

#include "calibrate/compare.h"
#include "hwprofiles/profile.h"
#include "simulator/plot_svg.h"
#include "simulator/simulate.h"

namespace lorasim::cli {

// The renderer's vocabulary, for the commands that build charts and write them.
using sim::PlotLimit;
using sim::PlotSeries;
using sim::SplitChart;
using sim::write_svg;

/// Every split of the simulation, its limits and its recommendation.
SplitChart simulation_chart(const sim::Request& request, const hw::Profile& profile, const sim::Result& result);

/// simulation_chart for data of many lengths: the mean and the 99th-percentile step, the expected
/// and the worst micro-batch's peak reserved.
SplitChart lengths_chart(const sim::Request& request, const hw::Profile& profile, const sim::LengthsResult& r);

/// Predicted and measured series for the compared splits; `predicted` is the simulation the
/// predictions came from (for the limits); `measured_where` says where the runs were timed
/// ("measured on NVIDIA H200", "measured in runs.csv").
SplitChart comparison_chart(const model::Workload& workload, int64_t effective_batch, const hw::Profile& profile,
                            const sim::Result& predicted, const std::vector<calib::ComparedSplit>& rows,
                            const std::string& measured_where);

}  // namespace lorasim::cli
