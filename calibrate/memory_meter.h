// Peak-memory measurement and an artificial memory limit for one device (private to
// calibrate/). CUDA reads the caching allocator's statistics; the CPU has no such statistics,
// so there lorasim installs a counting allocator that wraps every CPU allocation.
#pragma once
#include <cstdint>
#include <memory>

namespace lorasim::calib {

class MemoryMeter {
 public:
  /// The meter for a CUDA device (index) or the CPU. Installing the CPU's counting
  /// allocator happens once per process, before the first tensor the trainer allocates.
  static std::unique_ptr<MemoryMeter> for_device(bool is_cuda, int device_index);
  virtual ~MemoryMeter() = default;

  /// CUDA: returns cached blocks to the driver so reserved memory restarts from what is live.
  virtual void release_cache() = 0;
  /// Starts a new peak from the current usage.
  virtual void reset_peak() = 0;
  virtual int64_t current_allocated_bytes() = 0;
  virtual int64_t peak_allocated_bytes() = 0;
  /// Allocated plus what the caching allocator holds; equal to allocated on the CPU.
  virtual int64_t peak_reserved_bytes() = 0;
  /// Makes allocations fail with an out-of-memory error above `bytes` (0 lifts the limit).
  /// CUDA limits reserved memory (setMemoryFraction); the CPU limits allocated bytes.
  virtual void set_limit(int64_t bytes) = 0;
};

}  // namespace lorasim::calib
