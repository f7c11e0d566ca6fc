// `lorasim train`: real LoRA training steps of one split, with measured time and memory.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "calibrate/convert.h"
#include "calibrate/length_sampler.h"
#include "calibrate/measurement.h"
#include "calibrate/measurement_io.h"
#include "calibrate/precision.h"
#include "calibrate/process_group.h"
#include "calibrate/runner.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "cli/lengths_args.h"
#include "cli/memory_limit.h"
#include "cli/output_path.h"
#include "cli/spawn_ranks.h"

namespace lorasim::cli {

int cmd_train(const Args& args) {
  WorkloadArgs wa;
  wa.stack.stack = "lorasim";  // what `train` runs
  std::string device = "auto", format = "table";
  int64_t micro = 1, accum = 1, steps = 10, warmup = 1, seed = 0;
  MemoryLimitArgs memory;
  LengthsArgs lengths;
  std::string save;
  RankArgs ranks;
  OptionTable t;
  t.text("device", device, "auto, cpu, cuda or cuda:N")
      .quantity("device")
      .integer("micro-batch", micro, 1, "sequences per forward/backward")
      .integer("accum", accum, 1, "gradient accumulation steps")
      .integer("steps", steps, 1, "measured optimizer steps")
      .integer("warmup", warmup, 0, "optimizer steps before measuring");
  add_workload_options(t, wa);
  add_memory_limit_options(t, memory, "cap device memory, e.g. 20GiB");
  t.text("format", format, "table or json");
  add_lengths_options(t, lengths);
  t.integer("seed", seed, 0, "seeds the random weights and tokens and, with --lengths, the order of the sequences")
      .path("save-measurements", save, "also write the run as a measurement row to this .csv (docs/measurements.md)");
  add_rank_options(t, ranks, "data-parallel ranks on this host, each training --micro-batch sequences of every "
                             "micro-batch, gradients averaged by c10d (Gloo on the CPU, NCCL on CUDA) once per step");
  if (!t.parse(args)) {
    std::cout << "usage: lorasim train [options]\n\n"
                 "Runs real LoRA training steps (random weights and tokens: speed and memory do not\n"
                 "depend on the values) and reports the measured step time and peak memory.\n\n"
                 "examples:\n"
                 "  lorasim train --device cuda --model qwen3-1.7b --micro-batch 4 --accum 4 --seq-len 512 --steps 50\n"
                 "  lorasim train --device cpu --model tiny --micro-batch 2 --accum 2 --seq-len 64\n"
                 "  lorasim train --device cuda --model qwen3-1.7b --micro-batch 4 --accum 4 --lengths lengths.csv \\\n"
                 "                --padding longest --max-length 1024 --seed 1 --save-measurements run.csv\n\n"
                 "With --lengths, each micro-batch holds sequences drawn from the file (a seeded random order\n"
                 "without replacement) right-padded to the --padding width, labels -100 on the pads; the row\n"
                 "records the width of every timed micro-batch (padded_lengths, docs/lengths.md).\n\n"
                 "With --processes N, N ranks train data-parallel (docs/data-parallel.md): the effective batch is\n"
                 "micro-batch x accum x N, rank 0 reports its times and the ranks' mean loss; CUDA ranks take\n"
                 "cuda:RANK. --rank/--world-size/--rendezvous run one rank under a launcher of your own.\n\n"
              << t.description() << "\n";
    return kOk;
  }
  const Format fmt = parse_format(format);
  if (fmt == Format::csv) throw InputError("--format: train prints table or json, not csv");
  require_runner_stack(build_stack(wa.stack), "train");
  const bool with_lengths = lengths_given(t);
  if (with_lengths && lengths.group_by_length)
    throw InputError("--group-by-length: lorasim's runner draws micro-batches at random; drop it (simulate and "
                     "recommend model it)");
  check_outputs({{"--save-measurements", save, ".csv"}}, {{"--lengths", lengths.file, ""}});
  check_rank_args(t, ranks);
  if (ranks.processes > 1 && with_lengths)
    throw InputError("--processes: data-parallel runs of the runner take fixed lengths; drop --lengths");
  if (ranks.processes > 1) return spawn_ranks("train", args, ranks.processes);
  const bool lead = ranks.rank == 0;  // reports; the other ranks only train
  calib::DeviceInfo dev = calib::resolve_device(device);
  // One GPU per rank, as torchrun's LOCAL_RANK: "cuda" or "auto" becomes cuda:RANK.
  if (dev.is_cuda && ranks.world_size > 1 && device.find(':') == std::string::npos)
    dev = calib::resolve_device("cuda:" + std::to_string(ranks.rank));
  const calib::PrecisionChoice precision = calib::resolve_precision(wa.precision, dev);
  calib::RunSpec spec;
  spec.workload = build_workload(wa, dev.bf16_supported);
  spec.workload.train.precision = precision.precision;
  if (with_lengths) {
    apply_lengths(lengths, spec.workload);
    calib::require_padded_collation(spec.workload.train.padding);
  }
  spec.data_seed = static_cast<uint64_t>(seed);
  if (!precision.note.empty() && lead) std::cerr << "note: " << precision.note << "\n";
  spec.micro_batch = micro;
  spec.accumulation = accum;
  spec.measure_steps = static_cast<int>(steps);
  spec.split_host_device = true;  // reported below where the model is shallow enough
  spec.warmup_steps = static_cast<int>(warmup);
  spec.memory_limit_bytes = checked_memory_limit(memory, dev.total_memory_bytes, dev.name);

  // The rendezvous first: a bad path or a missing rank fails before the model is built.
  std::unique_ptr<calib::ProcessGroup> group;
  if (ranks.world_size > 1)
    group = std::make_unique<calib::ProcessGroup>(calib::ProcessGroupSpec{
        static_cast<int>(ranks.rank), static_cast<int>(ranks.world_size), ranks.rendezvous, dev.spec});
  if (lead) std::cerr << "building " << spec.workload.arch.name << " on " << dev.name << " (" << dev.spec << ")...\n";
  calib::Trainer trainer(spec.workload, dev.spec, static_cast<uint64_t>(seed));
  if (group) trainer.join(*group);
  if (lead)
    std::cerr << "training " << spec.warmup_steps << " warm-up + " << spec.measure_steps << " measured steps of "
              << spec.micro_batch << " x " << spec.accumulation
              << (group ? " x " + std::to_string(group->size()) + " ranks (" + group->backend() + ")" : std::string())
              << "...\n";
  const calib::RunResult r = trainer.run(spec);
  if (group) group->barrier();  // no rank leaves while another still needs it
  if (!lead) return r.oom ? kCalibration : kOk;
  if (!save.empty()) calib::write_measurements_csv({calib::to_measurement(spec.workload, r)}, save);
  // Tokens of the data per step: the real ones on data of many lengths, every row's otherwise.
  const double tokens_per_micro_batch = r.collation.empty()
                                            ? static_cast<double>(spec.micro_batch * spec.workload.train.seq_len)
                                            : r.real_tokens;

  nlohmann::json j = {{"device", dev.name}, {"workload", workload_json(spec.workload)},
                      {"micro_batch", spec.micro_batch}, {"accumulation", spec.accumulation}, {"oom", r.oom}};
  if (group) {
    j["processes"] = group->size();
    j["backend"] = group->backend();
  }
  if (!r.oom) {
    j["step_time_s"] = r.step_time_s;
    j["micro_batch_time_s"] = r.micro_batch_time_s;
    j["optimizer_time_s"] = r.optimizer_time_s;
    j["host_time_s"] = calib::measured(r.host_time_s) ? nlohmann::json(r.host_time_s) : nlohmann::json(nullptr);
    j["device_time_s"] = calib::measured(r.device_time_s) ? nlohmann::json(r.device_time_s) : nlohmann::json(nullptr);
    j["peak_allocated_bytes"] = r.peak_allocated_bytes;
    j["peak_reserved_bytes"] = r.peak_reserved_bytes;
    j["tokens_per_s"] = tokens_per_micro_batch * static_cast<double>(spec.accumulation * (group ? group->size() : 1)) /
                        r.step_time_s;  // every rank's tokens
    j["losses"] = r.losses;
  } else {
    j["error"] = r.error;
  }
  if (!r.collation.empty()) {
    j["collation"] = r.collation;
    j["padded_lengths"] = model::format_padded_widths(r.padded_lengths);
    j["real_tokens"] = r.oom ? nlohmann::json(nullptr) : nlohmann::json(r.real_tokens);
    j["new_shapes_per_step"] = r.oom ? nlohmann::json(nullptr) : nlohmann::json(r.new_shapes_per_step);
  }
  const bool varied = r.padded_lengths.size() > 1;  // the runner's step time is then the mean
  if (fmt == Format::json) {
    std::cout << j.dump(2) << "\n";
  } else if (r.oom) {
    std::cout << "out of memory at micro-batch " << spec.micro_batch << ": " << r.error << "\n";
  } else {
    std::cout << "workload:        " << spec.workload.arch.name << ", " << workload_line(spec.workload) << "\n"
              << "stack:           " << spec.workload.stack.describe() << "\n"
              << "split:           micro-batch " << spec.micro_batch << " x accumulation " << spec.accumulation
              << (group ? " x " + std::to_string(group->size()) + " ranks (c10d " + group->backend() +
                              "; times and memory: rank 0's, loss: the ranks' mean)"
                        : std::string())
              << "\n"
              << "step time:       " << human_seconds(r.step_time_s) << " (" << (varied ? "mean" : "median") << " of "
              << spec.measure_steps << (varied ? ", " + fixed(r.new_shapes_per_step, 2) + " new shapes per step" : "")
              << ")\n"
              << "micro-batch:     " << human_seconds(r.micro_batch_time_s);
    if (!r.collation.empty())
      std::cout << " (" << r.collation << " padding; widths " << model::format_padded_widths(r.padded_lengths)
                << ", " << fixed(r.real_tokens, 1) << " real tokens each)";
    if (calib::measured(r.host_time_s))
      std::cout << " (host dispatch " << human_seconds(r.host_time_s) << ", device " << human_seconds(r.device_time_s) << ")";
    std::cout << "\noptimizer step:  " << human_seconds(r.optimizer_time_s) << "\n"
              << "throughput:      " << fixed(j["tokens_per_s"].get<double>(), 0) << " tokens/s\n"
              << "peak memory:     " << human_bytes(static_cast<double>(r.peak_allocated_bytes)) << " allocated, "
              << human_bytes(static_cast<double>(r.peak_reserved_bytes)) << " reserved\n"
              << "loss:            " << (r.losses.empty() ? 0.0 : r.losses.front()) << " -> "
              << (r.losses.empty() ? 0.0 : r.losses.back()) << "\n";
  }
  return r.oom ? kCalibration : kOk;
}

}  // namespace lorasim::cli
