// simulate's and recommend's output for data of many lengths: the fixed-length JSON with each
// split's length figures added, and the table and CSV with their columns.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/lengths_args.h"
#include "cli/recommend_lines.h"
#include "hwprofiles/profile.h"
#include "simulator/request.h"
#include "simulator/result.h"

namespace lorasim::cli {

/// Adds to simulate's JSON (`j`, made from `r.result`) each split's step_time_p99_s,
/// padding_fraction, epoch_time_s, ..., the recommended split's epoch time, and a "lengths"
/// object describing the data.
/// r.advice adds the recommendation's next_best and alternatives (their notes are among the notes).
void add_lengths_json(nlohmann::json& j, const sim::Request& req, const sim::LengthsResult& r, const LengthsArgs& a);
void print_lengths_csv(std::ostream& out, const sim::LengthsResult& r);
struct LengthsTableOptions {
  bool with_splits = true;           ///< simulate's table of splits; recommend prints the recommendation alone
  RecommendationContext recommend;   ///< both_grad_ckpt: each split twice, checkpointing off and on (a "ckpt" column)
};
/// The header, then (when `with_splits`) the table of splits, the recommendation and `notes`.
void print_lengths_table(std::ostream& out, const sim::Request& req, const hw::Profile& p, const sim::LengthsResult& r,
                         const LengthsArgs& a, const LengthsTableOptions& options, const std::vector<std::string>& notes);

}  // namespace lorasim::cli
