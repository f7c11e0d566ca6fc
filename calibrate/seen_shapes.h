// Which timed micro-batches met a (rows, padded width) shape for the first time in this process:
// a row's `new_shapes_per_step` (docs/measurements.md), counted as the Python probe counts it
// (python/lorasim_hf/seen.py). Kernel libraries choose a kernel per shape and cache the choice for
// the process, so the first micro-batch of a shape is slower (docs/lengths.md, "New shapes"); the
// memory of shapes lives as long as the process, across trainers. Torch-free, so it is tested
// without LibTorch.
#pragma once
#include <cstdint>
#include <string>

#include "model/workload.h"

namespace lorasim::calib {

/// Models whose kernels are alike at one (rows, width), whatever their depth: the kernels chosen
/// for a shape by one serve the other (as the probe's shape_key). Everything that sets a kernel's
/// shape or dtype -- the architecture without its depth, the LoRA rank and targets, the precision
/// -- and the device the model runs on.
std::string shape_kind(const model::Workload& w, const std::string& device_spec);

/// Treats the process as fresh, every shape new again: for tests that count new shapes.
void forget_shapes();

/// One run's view of its kind's shapes. Every training forward is seen -- the warm-up's too, so
/// their shapes are not new later; only while counting does a shape the kind had not met add to
/// new_shapes().
class ShapeTally {
 public:
  explicit ShapeTally(std::string kind);
  /// A training forward of `rows` x `width_tokens` tokens.
  void see(int64_t rows, int64_t width_tokens);
  void start_counting();  ///< the timed steps begin
  void stop_counting();   ///< they ended: later forwards are seen, not counted
  int64_t new_shapes() const { return new_shapes_; }

 private:
  std::string kind_;
  bool counting_ = false;
  int64_t new_shapes_ = 0;
};

/// A row's new_shapes_per_step: the timed steps' new shapes per step where the timed
/// micro-batches had several widths, else 0 (fixed lengths, or one width: the warm-up met it),
/// as the probe writes it.
double new_shapes_per_step(int64_t new_shapes, int64_t measure_steps, bool widths_varied);

}  // namespace lorasim::calib
