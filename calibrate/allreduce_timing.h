// Times c10d all-reduces over message sizes on the runner's process group (Gloo on the CPU,
// NCCL on CUDA): the rows calibrate/fit_interconnect.h turns into a profile's [interconnect].
// No torch types here.
#pragma once
#include <cstdint>
#include <vector>

#include "calibrate/allreduce_rows.h"
#include "calibrate/device.h"
#include "calibrate/process_group.h"

namespace lorasim::calib {

struct AllreduceTimingSpec {
  int64_t min_bytes = int64_t{1} << 10;  ///< 1 KiB
  int64_t max_bytes = int64_t{64} << 20; ///< 64 MiB; sizes step by x4 from min_bytes up to it
  int warmup = 3;                        ///< untimed all-reduces per size (the first sets up the ring)
  int repeats = 10;                      ///< timed all-reduces per size
};

/// The message sizes `spec` times, in bytes (multiples of 4: fp32 elements), ascending.
std::vector<int64_t> allreduce_sizes(const AllreduceTimingSpec& spec);

/// Every rank calls it with the same spec; every rank returns the same rows (the slowest rank's
/// mean time per size, as nccl-tests reports). Fp32 tensors on `device` (the group's device).
/// Throws InputError for a bad spec, CalibrationError when a collective fails.
std::vector<AllreduceRow> time_allreduce(ProcessGroup& group, const DeviceInfo& device,
                                         const AllreduceTimingSpec& spec);

}  // namespace lorasim::calib
