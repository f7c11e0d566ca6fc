// The recommendation's lines under simulate's table and in recommend's output: the split, its
// TrainingArguments, what came second and why, the fastest split refused for memory, a faster one
// refused by less than a tenth of the memory, and, when
// nothing fits, what would change that (cli/no_fit_advice.h). The JSON says the same.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "simulator/simulate.h"

namespace lorasim::cli {

struct RecommendationContext {
  bool both_grad_ckpt = false;  ///< every split weighed with checkpointing off and on
  std::string trainer;          ///< --trainer's preset, "" where not given
  bool four_bit_fits = false;   ///< nothing fits, and a 4-bit base would (cli/quant_hint.h)
  bool with_lengths = false;    ///< data of many lengths: their cap is --max-length, not --seq-len
};

void print_recommendation(std::ostream& out, const sim::Request& req, const sim::Result& r,
                          const RecommendationContext& c);

/// Adds "runner_up", "refused" and "near_miss" to j["recommended"] (where there are such splits), or
/// "no_fit_advice" (cli/no_fit_advice.h's keys) to `j` where nothing fits.
void add_recommendation_json(nlohmann::json& j, const sim::Request& req, const sim::Result& r,
                             const RecommendationContext& c);

/// The split that came second (the fastest that fits after the recommended one); none: null.
const sim::Split* runner_up(const sim::Result& r);
/// The fastest split faster than the recommended one that does not fit; null where none.
const sim::Split* fastest_refused(const sim::Result& r);
/// The fastest split faster than the recommended one that lorasim refuses (not one measured) although
/// it needs at most 10% more than the usable memory; null where none.
const sim::Split* near_miss(const sim::Result& r);
/// "near miss: ..." for near_miss(r), or nothing.
void print_near_miss(std::ostream& out, const sim::Result& r, bool both);

}  // namespace lorasim::cli
