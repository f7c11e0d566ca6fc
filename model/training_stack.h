// A training stack as the cost model sees it: what one micro-batch of a workload dispatches,
// computes, moves and saves under that stack (model::Features), and the few words the simulator
// says about its figures. One implementation per stack (model/stacks/); its coefficients are the
// table's rows (model/coefficients.h). A new stack is one file of features plus its rows' entries.
#pragma once
#include <cstdint>
#include <string>

#include "model/analytics.h"
#include "model/coefficients.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::model {

class TrainingStack {
 public:
  virtual ~TrainingStack() = default;
  virtual StackKind kind() const = 0;
  virtual const char* name() const = 0;  ///< "hf-peft", "lorasim"

  /// The stack's options when none is given.
  virtual StackSpec default_spec() const = 0;
  /// Throws InputError for an option the stack does not have (the spec's own ranges are checked).
  virtual void validate(const StackSpec& spec) const = 0;
  /// "hf-peft (sdpa, dropout 0.05, autocast, default allocator)"
  virtual std::string describe(const StackSpec& spec) const = 0;

  /// The regressors of one micro-batch of `w` (FLOPs are the model's; the rest the stack's).
  Features features(const Workload& w, int64_t micro_batch) const;

  // What the stack runs, per micro-batch (docs/cost-model.md, docs/hf-stack-memory.md).
  virtual double memory_bound_bytes(const Workload& w, int64_t micro_batch) const = 0;
  virtual double loss_bytes(const Workload& w, int64_t micro_batch) const = 0;
  virtual double host_ops(const Workload& w) const = 0;
  virtual double recompute_ops(const Workload& w) const = 0;
  virtual ActivationMemory activation_memory(const Workload& w, int64_t micro_batch) const = 0;
  /// Memory beyond weights, adapters, gradients and AdamW that the stack holds whatever the batch.
  virtual double extra_static_bytes(const Workload& w) const = 0;
  /// The loss's fixed-size tile, if it has one.
  virtual LossTile loss_tile(const Workload&) const { return {}; }

  /// Whether the stack's calibration rows identify the device's rows ([time]/[memory]): the
  /// runner's do; another stack's refine only its own rows on a given device.
  virtual bool calibrates_device() const = 0;

  // The simulator's notes about this stack's figures ("" for none); percentages come formatted.
  /// Its own rows are priors (its section is not calibrated on this device).
  virtual std::string prior_note(const std::string& device_name, const std::string& time_error) const = 0;
  /// What its reserved memory assumes (the allocator, the worst case's slack).
  virtual std::string memory_note(const StackSpec& spec, bool asynchronous, const std::string& memory_error) const = 0;
  /// When some split is host-bound: how far such times may stray.
  virtual std::string host_bound_note(const std::string& host_spread) const = 0;
};

/// The stack object of `kind`.
const TrainingStack& training_stack(StackKind kind);

}  // namespace lorasim::model
