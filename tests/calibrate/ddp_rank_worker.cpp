// One rank of the runner's data-parallel test (data_parallel_runner_test.cpp launches it): the
// tiny preset on the CPU, one optimizer step, then the step's loss and every adapter weight
// written to a file. Arguments: RANK WORLD_SIZE RENDEZVOUS MICRO_BATCH ACCUMULATION OUT.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <string>

#include "calibrate/process_group.h"
#include "calibrate/runner.h"
#include "model/architecture.h"

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: ddp_rank_worker RANK WORLD_SIZE RENDEZVOUS MICRO_BATCH ACCUMULATION OUT\n");
    return 2;
  }
  try {
    using namespace lorasim;
    const int rank = std::atoi(argv[1]), world = std::atoi(argv[2]);
    model::Workload w;
    w.arch = model::preset("tiny");
    w.lora.rank = 8;
    w.lora.alpha = 16;
    w.train.seq_len = 16;
    w.train.precision = model::Precision::fp32;
    calib::Trainer trainer(w, "cpu", /*seed=*/3);  // the same starting weights on every rank
    trainer.randomize_adapters(5);                 // a non-zero B, so A's gradient counts too
    trainer.set_learning_rate(1e-2);
    std::unique_ptr<calib::ProcessGroup> group;
    if (world > 1) {
      group = std::make_unique<calib::ProcessGroup>(calib::ProcessGroupSpec{rank, world, argv[3], "cpu", 120});
      trainer.join(*group);
    }
    calib::RunSpec spec;
    spec.workload = w;
    spec.micro_batch = std::atoll(argv[4]);
    spec.accumulation = std::atoll(argv[5]);
    spec.warmup_steps = 0;
    spec.measure_steps = 1;
    spec.data_seed = 7;
    const calib::RunResult r = trainer.run(spec);
    if (group) group->barrier();
    // The gradients of the next batch as well: AdamW's first step is about lr x sign(gradient),
    // which would hide an average missing its division.
    const std::vector<float> grads = trainer.accumulated_gradients(spec.micro_batch, spec.accumulation, 16, 11);
    const std::vector<float> weights = trainer.adapter_weights();
    std::ofstream out(argv[6]);
    out.precision(17);
    out << r.losses.at(0) << " " << r.processes << " " << weights.size() << "\n";
    out.precision(9);
    for (const float v : weights) out << v << "\n";
    for (const float v : grads) out << v << "\n";
    return out ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %s: %s\n", argv[1], e.what());
    return 1;
  }
}
