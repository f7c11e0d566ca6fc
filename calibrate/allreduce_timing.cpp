// All-reduce timing on c10d (allreduce_timing.h).
#include "calibrate/allreduce_timing.h"

#include <algorithm>
#include <chrono>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "calibrate/process_group_torch.h"
#include "model/error.h"

namespace lorasim::calib {

std::vector<int64_t> allreduce_sizes(const AllreduceTimingSpec& spec) {
  if (spec.min_bytes < 4 || spec.max_bytes < spec.min_bytes || spec.max_bytes > (int64_t{1} << 34))
    throw InputError("all-reduce sizes must run from at least 4 bytes up to at most 16 GiB, smallest first");
  std::vector<int64_t> out;
  for (int64_t b = spec.min_bytes; b <= spec.max_bytes; b *= 4) out.push_back(b / 4 * 4);
  if (out.back() != spec.max_bytes / 4 * 4) out.push_back(spec.max_bytes / 4 * 4);
  return out;
}

std::vector<AllreduceRow> time_allreduce(ProcessGroup& group, const DeviceInfo& device,
                                         const AllreduceTimingSpec& spec) {
  if (spec.warmup < 0 || spec.repeats < 1) throw InputError("all-reduce timing needs warmup >= 0 and repeats >= 1");
  if (group.size() < 2) throw InputError("timing an all-reduce needs at least 2 processes", "processes");
  const std::vector<int64_t> sizes = allreduce_sizes(spec);
  ProcessGroup::Impl& g = group.impl();
  const torch::Device dev(device.spec);
  auto sync = [&] {
    if (device.is_cuda) torch::cuda::synchronize(dev.index());
  };
  std::vector<AllreduceRow> rows;
  try {
    for (const int64_t bytes : sizes) {
      std::vector<torch::Tensor> t = {torch::ones({bytes / 4}, torch::TensorOptions().device(dev).dtype(torch::kFloat32))};
      for (int i = 0; i < spec.warmup; ++i) g.allreduce_sum(t);
      sync();
      g.barrier();  // every rank starts the timed repeats together
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < spec.repeats; ++i) g.allreduce_sum(t);
      sync();  // NCCL's wait() orders the stream; the clock needs the GPU done
      const double mean_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / spec.repeats;
      std::vector<torch::Tensor> slowest = {torch::full({1}, mean_s, torch::TensorOptions().device(dev).dtype(torch::kFloat64))};
      g.allreduce_max(slowest);
      AllreduceRow r;
      r.backend = g.backend;
      r.device = device.is_cuda ? device.name : "cpu";
      r.processes = g.size;
      r.bytes = bytes;
      r.time_s = slowest[0].item<double>();
      rows.push_back(r);
    }
  } catch (const c10::Error& e) {
    throw CalibrationError("an all-reduce on " + g.backend + " failed: " + e.what_without_backtrace());
  }
  return rows;
}

}  // namespace lorasim::calib
