// `lorasim validate --measurements FILE`: predicted vs measured for runs timed elsewhere.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "calibrate/compare.h"
#include "cli/args.h"
#include "cli/lengths_args.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

/// A measured figure, or null where it was not measured.
nlohmann::json measured_json(double v);

/// The keys of one compared split that both validate modes print.
nlohmann::json compared_split_json(const calib::ComparedSplit& c);
/// Share of the measured splits whose step time fell within the predicted range; null for none.
nlohmann::json time_range_coverage_json(const calib::ComparisonSummary& s);
/// "step time within the predicted range: 47 of 54 splits (87%)" and a newline.
std::string time_range_line(const calib::ComparisonSummary& s);

/// Compares every row of the file with the profile's prediction; rows of one workload and
/// effective batch form a group whose recommendation is checked against the fastest run.
/// A non-empty `plot_path` gets an SVG chart per group (simulator/plot_svg.h).
/// Rows with padded_lengths are predicted from their own widths (sim::simulate_measured_widths);
/// the others from `lengths` where given (sim::simulate_lengths), else from their seq_len. Where
/// Rows of several processes (`processes`, data-parallel) are predicted on that many GPUs over
/// `link` (empty: the profile's [interconnect]), under FSDP FULL_SHARD where `fsdp`. Where
/// any row is predicted from lengths, each split says which (predicted_from: seq_len,
/// lengths_file, padded_lengths) in every format.
int validate_measurements(const std::string& path, const hw::Profile& profile, Format format,
                          int64_t memory_limit_bytes, double safety_margin, const std::string& plot_path,
                          const LengthsArgs* lengths = nullptr, std::optional<model::Link> link = std::nullopt,
                          bool fsdp = false);

}  // namespace lorasim::cli
