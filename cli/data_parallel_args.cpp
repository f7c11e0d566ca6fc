// --gpus and --link, and the lines and keys they add to simulate's and recommend's output.
#include "cli/data_parallel_args.h"

#include "cli/format.h"
#include "model/error.h"

namespace lorasim::cli {

void add_data_parallel_options(OptionTable& t, DataParallelArgs& a) {
  t.integer("gpus", a.gpus, 1,
            "GPUs of one host training data-parallel (DDP, torchrun --nproc_per_node): the effective batch is "
            "split as micro-batch x accumulation x GPUs")
      .quantity("gpus")
      .text("link", a.link, "the GPUs' link for the all-reduce: nvlink or pcie (default: the profile's [interconnect])")
      .quantity("link")
      .toggle("fsdp", a.fsdp,
              "with --gpus N: FSDP FULL_SHARD (accelerate/Trainer, one decoder layer per unit, use_orig_params): "
              "the frozen weights sharded across the GPUs, all-gathered layer by layer; a prior not validated on a GPU")
      .quantity("fsdp");
}

void apply_data_parallel(const DataParallelArgs& a, sim::Request& request) {
  request.gpus = a.gpus;
  request.fsdp = a.fsdp;
  if (a.link.empty()) return;
  request.link = model::parse_link(a.link);
  if (a.gpus <= 1)
    throw InputError("--link " + a.link + " is the link between data-parallel GPUs: it needs --gpus N (N >= 2)", "link");
  // A GPU sold without NVLink (its profile's [interconnect] is PCIe: T4, L4, A10G) cannot use it.
  const auto& ic = request.hardware.interconnect;
  if (*request.link == model::Link::nvlink && ic && ic->link == model::Link::pcie)
    throw InputError("--link nvlink: the " + request.hardware.display_name +
                         " has no NVLink (its profile's [interconnect] is pcie): drop --link, or give --link pcie",
                     "link");
  // A CPU host's Gloo figures come from its own profile's [interconnect] only: no prior to stand in.
  if (*request.link == model::Link::gloo_cpu)
    throw InputError("gloo-cpu is no GPU link and has no prior: drop --link to use a CPU profile's measured "
                     "[interconnect] (lorasim calibrate --interconnect --device cpu)", "link");
}

void add_split_data_parallel_json(const sim::Split& s, nlohmann::json& j) {
  if (s.gpus <= 1) return;
  j["gpus"] = s.gpus;
  j["allreduce_time_s"] = s.allreduce_time_s;
  j["allreduce_exposed_s"] = s.allreduce_exposed_s;
  if (!s.fsdp) return;
  j["fsdp_comm_time_s"] = s.fsdp_comm_time_s;
  j["fsdp_exposed_s"] = s.fsdp_exposed_s;
}

void add_result_data_parallel_json(const sim::Request& req, const sim::Result& r, nlohmann::json& j) {
  if (req.gpus <= 1) return;
  j["gpus"] = req.gpus;
  j["data_parallel"] = {{"gpus", req.gpus},
                        {"per_gpu_batch", req.effective_batch / req.gpus},
                        {"gradient_bytes", r.data_parallel.gradient_bytes},
                        {"buckets", r.data_parallel.buckets},
                        {"link", model::link_name(r.interconnect.link)},
                        {"allreduce_gbps", r.interconnect.allreduce_gbps},
                        {"allreduce_latency_s", r.interconnect.allreduce_latency_s}};
  if (!r.fsdp) return;
  const sim::FsdpMemory& m = r.fsdp_memory;
  j["data_parallel"]["fsdp"] = {{"sharding_strategy", "FULL_SHARD"},
                                {"sharded_weights_bytes", static_cast<int64_t>(m.sharded_weights_bytes)},
                                {"root_unit_bytes", static_cast<int64_t>(m.root_unit_bytes)},
                                {"layers_in_flight", sim::kFsdpLayersInFlight},
                                {"layers_in_flight_bytes", static_cast<int64_t>(m.layers_in_flight_bytes)},
                                {"adapter_state_bytes", static_cast<int64_t>(m.adapter_state_bytes)},
                                {"memory_delta_bytes", static_cast<int64_t>(m.delta_bytes)}};
}

void print_launch(std::ostream& os, const HfArguments& hf) {
  const LaunchCommands l = launch_commands(hf);
  if (l.torchrun.empty()) return;
  os << "launch: " << l.torchrun << " train.py ... (or " << l.accelerate
     << " train.py ...); per_device_train_batch_size is per GPU\n";
  if (!hf.fsdp) return;
  os << "fsdp_config.json: " << fsdp_config_json(hf).dump()
     << " (gradient checkpointing through TrainingArguments, not FSDP's activation_checkpointing)\n"
     << "accelerate config: " << accelerate_fsdp_config(hf) << "\n";
}

void print_data_parallel_header(std::ostream& os, const sim::Request& req, const sim::Result& r) {
  if (req.gpus <= 1) return;
  if (r.fsdp) {
    os << "gpus:      " << req.gpus << " FSDP FULL_SHARD, " << req.effective_batch / req.gpus
       << " sequences per GPU per step; frozen weights sharded (" << human_bytes(r.fsdp_memory.sharded_weights_bytes)
       << " per GPU) and all-gathered layer by layer over " << model::link_name(r.interconnect.link) << " ("
       << fixed(r.interconnect.allreduce_gbps, 1) << " GB/s bus), "
       << human_seconds(r.splits.empty() ? 0 : r.splits.front().fsdp_comm_time_s) << " of collectives per step\n";
    return;
  }
  os << "gpus:      " << req.gpus << " data-parallel (DDP), " << req.effective_batch / req.gpus
     << " sequences per GPU per step; " << human_bytes(static_cast<double>(r.data_parallel.gradient_bytes))
     << " of gradients all-reduced in " << r.data_parallel.buckets << (r.data_parallel.buckets == 1 ? " bucket" : " buckets")
     << " over " << model::link_name(r.interconnect.link) << " (" << fixed(r.interconnect.allreduce_gbps, 1)
     << " GB/s bus), " << human_seconds(r.splits.empty() ? 0 : r.splits.front().allreduce_time_s) << " per step\n";
}

}  // namespace lorasim::cli
