// `lorasim calibrate --interconnect`: all-reduces timed over message sizes with c10d (the
// runner's process group: Gloo on the CPU, NCCL on CUDA) or read from rows the Python probe
// wrote, the ring model fitted (calibrate/fit_interconnect.h), and a profile written with that
// [interconnect]. Fitting rows needs no LibTorch; timing them runs in lorasim-train.
#include <iostream>

#include "calibrate/allreduce_rows.h"
#include "calibrate/fit_interconnect.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/forward.h"
#include "cli/hardware_args.h"
#include "cli/output_path.h"
#include "cli/spawn_ranks.h"
#include "hwprofiles/profile.h"
#include "model/error.h"
#ifdef LORASIM_WITH_CALIBRATE
#include "calibrate/allreduce_timing.h"
#include "calibrate/process_group.h"
#include "cli/device_profile.h"
#endif

namespace lorasim::cli {

bool calibrates_interconnect(const Args& args) {
  for (const auto& a : args)
    if (a == "--interconnect") return true;
  return false;
}

namespace {

std::string mib_or_kib(int64_t bytes) {
  return bytes >= (int64_t{1} << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

// The fit, the profile with it and the summary. `declared`: --link, where given.
int fit_and_write(const std::vector<calib::AllreduceRow>& rows, hw::Profile profile, const std::string& declared,
                  const std::string& out) {
  const calib::InterconnectFit fit = calib::fit_interconnect(rows);
  model::Link link = profile.hw.interconnect ? profile.hw.interconnect->link : model::Link::pcie;
  if (!declared.empty()) link = model::parse_link(declared);
  const bool cpu = rows.front().device == "cpu";
  if (link == model::Link::gloo_cpu && !cpu)
    throw InputError("--link gloo-cpu: these rows were timed on '" + rows.front().device +
                     "', a GPU; say its link (nvlink or pcie)", "link");
  if (cpu && profile.hw.overlap != model::Overlap::sum)
    throw InputError("these rows were timed by Gloo on the CPU and describe no link of '" + profile.hw.name +
                     "': write them into a CPU profile (--profile FILE of `lorasim calibrate --device cpu`)", "link");
  if (cpu && !declared.empty() && link != model::Link::gloo_cpu)
    std::cerr << "note: the rows were timed by Gloo on the CPU, so the link is recorded as gloo-cpu, not " << declared
              << " (CPU figures are no GPU link)\n";
  char err[96];
  std::snprintf(err, sizeof err, "fit rms %.1f%%, max %.1f%%", 100 * fit.rms_rel_error, 100 * fit.max_rel_error);
  const std::string source = "lorasim calibrate --interconnect: c10d " + rows.front().backend + " on " +
                             rows.front().device + ", " + std::to_string(rows.front().processes) + " processes, " +
                             std::to_string(fit.rows) + " rows of " + mib_or_kib(fit.min_bytes) + ".." +
                             mib_or_kib(fit.max_bytes) + ", " + err + ", " + utc_timestamp();
  profile.hw.interconnect = calib::to_interconnect(fit, rows, link, source);
  hw::write_profile_file(profile, out);
  std::cout << "interconnect: " << model::link_name(profile.hw.interconnect->link) << " (c10d "
            << rows.front().backend << " on " << rows.front().device << ", " << rows.front().processes
            << " processes)\n"
            << "  allreduce_latency_s = " << fit.allreduce_latency_s << " per ring step\n"
            << "  allreduce_gbps      = " << fit.allreduce_gbps << " GB/s bus bandwidth\n"
            << "  " << err << " over " << fit.rows << " rows (" << mib_or_kib(fit.min_bytes) << ".."
            << mib_or_kib(fit.max_bytes) << ")\n"
            << "wrote " << out << "\n";
  return kOk;
}

}  // namespace

int cmd_calibrate_interconnect(const Args& args) {
  bool interconnect = false;
  std::string out, device = "auto", rows_file, save, link;
  int64_t min_bytes = int64_t{1} << 10, max_bytes = int64_t{64} << 20, repeats = 10;
  HardwareArgs ha;
  RankArgs ranks;
  ranks.processes = 2;
  OptionTable t;
  t.toggle("interconnect", interconnect, "calibrate the link between processes (this mode)")
      .path("out", out, "profile to write (TOML, named .toml): the base profile with this [interconnect]; required")
      .text("device", device, "auto, cpu or cuda: where the timed all-reduces live (Gloo on the CPU, NCCL on CUDA)")
      .quantity("device")
      .path("measurements", rows_file, "fit these all-reduce rows (e.g. python -m lorasim_hf.probe_allreduce's) instead of timing")
      .path("save-measurements", save, "also write the timed rows to this .csv")
      .text("link", link, "the GPUs' link the rows measure: nvlink or pcie (default: the base profile's; CPU rows are gloo-cpu)")
      .quantity("link")
      .bytes("min-bytes", min_bytes, "smallest message (sizes step x4 up to --max-bytes)")
      .bytes("max-bytes", max_bytes, "largest message")
      .integer("repeats", repeats, 1, "timed all-reduces per size (their mean; the slowest rank's)");
  add_hardware_options(t, ha);
  add_rank_options(t, ranks, "ranks to time the all-reduces among (one per GPU on CUDA)");
  if (!t.parse(args)) {
    std::cout << "usage: lorasim calibrate --interconnect --out FILE [options]\n\n"
                 "Times c10d all-reduces of 1 KiB..64 MiB among --processes ranks (Gloo on the CPU, NCCL on\n"
                 "CUDA), fits latency and bus bandwidth of the ring model `simulate --gpus N` uses, and writes\n"
                 "the base profile (--profile FILE, --gpu NAME, or this device's) with that [interconnect].\n"
                 "Rows timed by Gloo on the CPU are recorded as link \"gloo-cpu\": no GPU link.\n\n"
                 "examples:\n"
                 "  lorasim calibrate --interconnect --device cuda --processes 2 --profile my-h200.toml --out my-h200-x2.toml\n"
                 "  lorasim calibrate --interconnect --device cpu --processes 2 --out cpu-gloo.toml\n"
                 "  torchrun --nproc_per_node 2 -m lorasim_hf.probe_allreduce --out rows.csv\n"
                 "  lorasim calibrate --interconnect --measurements rows.csv --gpu h200 --out h200-x2.toml\n\n"
              << t.description() << "\n";
    return kOk;
  }
  if (out.empty()) throw InputError("--out FILE is required: where to write the profile");
  check_outputs({{"--out", out, ".toml"}, {"--save-measurements", save, ".csv"}},
                {{"--measurements", rows_file, ""}, {"--profile", ha.profile, ""}});
  check_rank_args(t, ranks);
  const bool is_rank = t.given("rank") || t.given("world-size");
  if (!rows_file.empty()) {
    if (t.given("processes") || is_rank || !save.empty())
      throw InputError("--measurements fits rows already timed: drop --processes, --rank and --save-measurements");
    if (!ha.gpu_given && ha.profile.empty())
      throw InputError("--measurements: name the profile that gets the [interconnect] (--gpu NAME or --profile FILE)");
    return fit_and_write(calib::read_allreduce_csv(rows_file), select_profile(ha), link, out);
  }
  if (ranks.processes < 2 && !is_rank) throw InputError("--processes: an all-reduce needs at least 2 ranks");
#ifndef LORASIM_WITH_CALIBRATE
  exec_train_binary("calibrate", args,
                    "time the link with `torchrun --nproc_per_node N -m lorasim_hf.probe_allreduce --out rows.csv` "
                    "and fit the rows with `lorasim calibrate --interconnect --measurements rows.csv`");
#else
  if (!is_rank) return spawn_ranks("calibrate", args, ranks.processes);
  if (ranks.world_size < 2) throw InputError("--world-size: an all-reduce needs at least 2 ranks");
  calib::DeviceInfo dev = calib::resolve_device(device);
  if (dev.is_cuda && device.find(':') == std::string::npos)
    dev = calib::resolve_device("cuda:" + std::to_string(ranks.rank));  // one GPU per rank
  calib::ProcessGroup group({static_cast<int>(ranks.rank), static_cast<int>(ranks.world_size), ranks.rendezvous, dev.spec});
  calib::AllreduceTimingSpec spec;
  spec.min_bytes = min_bytes;
  spec.max_bytes = max_bytes;
  spec.repeats = static_cast<int>(repeats);
  if (ranks.rank == 0)
    std::cerr << "timing c10d " << group.backend() << " all-reduces of " << mib_or_kib(min_bytes) << ".."
              << mib_or_kib(max_bytes) << " among " << group.size() << " ranks on " << dev.name << "...\n";
  const std::vector<calib::AllreduceRow> rows = calib::time_allreduce(group, dev, spec);
  group.barrier();
  if (ranks.rank != 0) return kOk;
  if (!save.empty()) calib::write_allreduce_csv(rows, save);
  hw::Profile base = ha.gpu_given || !ha.profile.empty() ? select_profile(ha) : hw::base_profile_for(identity_of(dev));
  return fit_and_write(rows, std::move(base), link, out);
#endif
}

}  // namespace lorasim::cli
