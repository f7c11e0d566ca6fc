// Data-parallel ranks of the LibTorch runner: one c10d process group (Gloo on the CPU, NCCL on
// CUDA where LibTorch was built with it) joined through a FileStore rendezvous. The runner
// averages the adapters' gradients over it once per optimizer step (calibrate/runner.h), and
// calibrate/allreduce_timing.h times all-reduces on it. No torch types here: the CLI includes it.
#pragma once
#include <memory>
#include <string>

namespace lorasim::calib {

struct ProcessGroupSpec {
  int rank = 0;               ///< this process, 0 .. world_size - 1
  int world_size = 1;         ///< processes in the group
  std::string rendezvous;     ///< a FileStore path every rank names; created by the first rank
  std::string device = "cpu"; ///< the rank's resolved device ("cpu", "cuda:N"): picks the backend
  double timeout_s = 600;     ///< a collective or the rendezvous waiting longer than this fails
};

/// One rank's membership of the group; every rank of `spec.world_size` must construct one with
/// the same rendezvous. Throws InputError for a bad rank, size or path, CalibrationError when the
/// rendezvous or the backend fails (a rank that never arrives: after timeout_s).
class ProcessGroup {
 public:
  explicit ProcessGroup(const ProcessGroupSpec& spec);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  /// "gloo" or "nccl": what the collectives run on.
  const std::string& backend() const;
  /// Blocks until every rank has called it.
  void barrier();

  struct Impl;  ///< calibrate/process_group_torch.h: the c10d backend (private, torch types)
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Whether this LibTorch has c10d's NCCL backend (a CUDA build with distributed support).
bool nccl_compiled();

}  // namespace lorasim::calib
