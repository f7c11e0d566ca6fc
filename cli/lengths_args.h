// The options of data of many lengths on simulate and recommend (--lengths, --padding,
// --max-length, --group-by-length), and what they put into a workload.
#pragma once
#include <cstdint>
#include <string>

#include "cli/option_table.h"
#include "model/workload.h"
#include "simulator/request.h"

namespace lorasim::cli {

struct LengthsArgs {
  std::string file;                ///< --lengths: one length per line or a length,count CSV; empty: fixed length
  std::string padding = "longest"; ///< model::parse_padding's forms
  int64_t max_length_tokens = 0;   ///< --max-length: truncation; 0: the file's longest
  bool group_by_length = false;
};

void add_lengths_options(OptionTable& table, LengthsArgs& args);
/// Whether --lengths was given; refuses --seq-len with it, and --padding, --max-length or
/// --group-by-length without it (InputError naming the flag).
bool lengths_given(const OptionTable& table);
/// Reads the file, truncates it and sets the workload's lengths and padding; the sequence length
/// becomes the maximum length (what every micro-batch stays within).
void apply_lengths(const LengthsArgs& args, model::Workload& w);
sim::LengthsOptions lengths_options(const LengthsArgs& args);

}  // namespace lorasim::cli
