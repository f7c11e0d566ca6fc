// simulate's and recommend's output for data of many lengths: the fixed-length JSON with each
// split's length figures added, and the table and CSV with their columns.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/lengths_args.h"
#include "cli/recommend_lines.h"
#include "hwprofiles/profile.h"
#include "simulator/lengths_sim.h"
#include "simulator/padding_advice.h"

namespace lorasim::cli {

/// Adds to simulate's JSON (`j`, made from `r.result`) each split's step_time_p99_s,
/// padding_fraction, epoch_time_s, ..., the recommended split's epoch time, and a "lengths"
/// object describing the data.
/// `advice` adds the recommendation's next_best and alternatives (its notes are in r's).
void add_lengths_json(nlohmann::json& j, const sim::Request& req, const sim::LengthsResult& r, const LengthsArgs& a,
                      const sim::PaddingAdvice& advice);
void print_lengths_csv(std::ostream& out, const sim::LengthsResult& r);
struct LengthsTableOptions {
  bool with_splits = true;           ///< simulate's table of splits; recommend prints the recommendation alone
  RecommendationContext recommend;   ///< both_grad_ckpt: each split twice, checkpointing off and on (a "ckpt" column)
};
/// The header, then (when `with_splits`) the table of splits, the recommendation and the notes.
void print_lengths_table(std::ostream& out, const sim::Request& req, const hw::Profile& p, const sim::LengthsResult& r,
                         const LengthsArgs& a, const LengthsTableOptions& options, const sim::PaddingAdvice& advice);

}  // namespace lorasim::cli
