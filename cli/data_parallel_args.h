// --gpus and --link: data-parallel training on the GPUs of one host (simulator/data_parallel.h),
// for simulate, recommend and validate, and what their output adds when --gpus is above 1.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/hf_arguments.h"
#include "cli/option_table.h"
#include "simulator/fsdp.h"
#include "simulator/simulate.h"

namespace lorasim::cli {

struct DataParallelArgs {
  int64_t gpus = 1;  ///< GPUs of one host training data-parallel (DDP)
  std::string link;  ///< nvlink or pcie; empty: the profile's [interconnect]
  bool fsdp = false; ///< FSDP FULL_SHARD instead of DDP: the frozen weights sharded across the GPUs
};
/// --gpus, --link and --fsdp.
void add_data_parallel_options(OptionTable& table, DataParallelArgs& args);
/// Sets the request's GPU count and link.
void apply_data_parallel(const DataParallelArgs& args, sim::Request& request);

/// The split's data-parallel figures into its JSON object; nothing on one GPU, so that the
/// output of one GPU is what it was before --gpus.
void add_split_data_parallel_json(const sim::Split& s, nlohmann::json& split);
/// The request's GPUs and link into the result's JSON; nothing on one GPU.
void add_result_data_parallel_json(const sim::Request& req, const sim::Result& r, nlohmann::json& result);
/// The recommendation's "launch:" line, and with FSDP its fsdp_config and accelerate config lines;
/// nothing on one GPU.
void print_launch(std::ostream& os, const HfArguments& hf);
/// The table header's "gpus:" line; nothing on one GPU.
void print_data_parallel_header(std::ostream& os, const sim::Request& req, const sim::Result& r);

}  // namespace lorasim::cli
