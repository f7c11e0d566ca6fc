// Memory meters: the CUDA caching allocator's statistics, and an exact counting allocator
// for the CPU (which also enforces a limit, so the out-of-memory path can be tested on CPU).
#include "calibrate/memory_meter.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#ifdef LORASIM_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

#include "model/error.h"

// LibTorch 2.3 made Allocator::allocate non-const and added the pure virtual copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define LORASIM_ALLOCATE_CONST
#define LORASIM_ALLOCATOR_HAS_COPY_DATA 1
#else
#define LORASIM_ALLOCATE_CONST const
#define LORASIM_ALLOCATOR_HAS_COPY_DATA 0
#endif

namespace lorasim::calib {

namespace {

// Counts the bytes of every live CPU tensor. Each block carries a 64-byte header holding its
// size, so the data pointer doubles as the deleter's context: the DataPtr stays "simple"
// (data == context), which raw_allocate() and 2.x's storage code expect.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  static CountingCpuAllocator& installed() {
    static CountingCpuAllocator* instance = [] {
      auto* a = new CountingCpuAllocator();  // lives as long as any tensor may: never freed
      // Priority above the default allocator's (0), so ours replaces it.
      c10::SetCPUAllocator(a, /*priority=*/100);
      if (c10::GetCPUAllocator() != a)
        throw CalibrationError("could not install lorasim's counting CPU allocator; another "
                               "allocator with a higher priority is registered");
      return a;
    }();
    return *instance;
  }

  c10::DataPtr allocate(size_t n) LORASIM_ALLOCATE_CONST override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &release, cpu};
    const int64_t bytes = static_cast<int64_t>(n);
    const int64_t now = current_.fetch_add(bytes) + bytes;
    const int64_t limit = limit_.load();
    if (limit > 0 && now > limit) {
      current_.fetch_sub(bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", n,
                       " bytes with ", now - bytes, " of the ", limit,
                       " bytes allowed (lorasim memory limit) in use");
    }
    void* base = nullptr;
    if (posix_memalign(&base, kHeader, kHeader + n) != 0) {
      current_.fetch_sub(bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", n,
                       " bytes");
    }
    *static_cast<int64_t*>(base) = bytes;
    raise_peak(now);
    void* data = static_cast<char*>(base) + kHeader;
    return {data, data, &release, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

#if LORASIM_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif

  int64_t current() const { return current_.load(); }
  int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(current_.load()); }
  void set_limit(int64_t bytes) { limit_.store(bytes); }

 private:
  static constexpr size_t kHeader = 64;  // also the alignment LibTorch's CPU allocator gives

  static void release(void* data) {
    if (data == nullptr) return;
    void* base = static_cast<char*>(data) - kHeader;
    instance_counter().fetch_sub(*static_cast<int64_t*>(base));
    std::free(base);
  }
  // The deleter is a plain function pointer, so it reaches the counter through a static.
  static std::atomic<int64_t>& instance_counter() { return installed().current_; }

  void raise_peak(int64_t now) const {
    int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
  }

  mutable std::atomic<int64_t> current_{0};
  mutable std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> limit_{0};
};

class CpuMemoryMeter final : public MemoryMeter {
 public:
  CpuMemoryMeter() : alloc_(CountingCpuAllocator::installed()) {}
  void release_cache() override {}
  void reset_peak() override { alloc_.reset_peak(); }
  int64_t current_allocated_bytes() override { return alloc_.current(); }
  int64_t peak_allocated_bytes() override { return alloc_.peak(); }
  int64_t peak_reserved_bytes() override { return alloc_.peak(); }
  void set_limit(int64_t bytes) override { alloc_.set_limit(bytes); }

 private:
  CountingCpuAllocator& alloc_;
};

#ifdef LORASIM_TORCH_CUDA
namespace cca = c10::cuda::CUDACachingAllocator;

// Index 0 of every StatArray is StatType::AGGREGATE (all pools). We index it by number
// because StatType moved between namespaces across 2.x releases.
constexpr size_t kAggregate = 0;

class CudaMemoryMeter final : public MemoryMeter {
 public:
  explicit CudaMemoryMeter(int device) : device_(device) {}
  void release_cache() override { cca::emptyCache(); }
  void reset_peak() override { cca::resetPeakStats(device_); }
  int64_t current_allocated_bytes() override {
    return cca::getDeviceStats(device_).allocated_bytes[kAggregate].current;
  }
  int64_t peak_allocated_bytes() override {
    return cca::getDeviceStats(device_).allocated_bytes[kAggregate].peak;
  }
  int64_t peak_reserved_bytes() override {
    return cca::getDeviceStats(device_).reserved_bytes[kAggregate].peak;
  }
  void set_limit(int64_t bytes) override {
    // The caching allocator limits reserved memory to a fraction of the device's total.
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(device_) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess ||
        total_bytes == 0)
      throw CalibrationError("cannot read the memory size of cuda:" + std::to_string(device_));
    double fraction = bytes > 0 ? static_cast<double>(bytes) / static_cast<double>(total_bytes) : 1.0;
    if (fraction > 1.0) fraction = 1.0;
    cca::setMemoryFraction(fraction, device_);
  }

 private:
  int device_;
};
#endif

}  // namespace

std::unique_ptr<MemoryMeter> MemoryMeter::for_device(bool is_cuda, int device_index) {
#ifdef LORASIM_TORCH_CUDA
  if (is_cuda) return std::make_unique<CudaMemoryMeter>(device_index);
#else
  if (is_cuda) throw CalibrationError("this lorasim was built without CUDA");
#endif
  return std::make_unique<CpuMemoryMeter>();
}

}  // namespace lorasim::calib
