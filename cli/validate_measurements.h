// `lorasim validate --measurements FILE`: predicted vs measured for runs timed elsewhere.
#pragma once
#include <string>

#include "cli/args.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

/// Compares every row of the file with the profile's prediction; rows of one workload and
/// effective batch form a group whose recommendation is checked against the fastest run.
/// A non-empty `plot_path` gets an SVG chart per group (simulator/plot_svg.h).
int validate_measurements(const std::string& path, const hw::Profile& profile, Format format,
                          int64_t memory_limit_bytes, double safety_margin, const std::string& plot_path);

}  // namespace lorasim::cli
