// The stack half of a profile: what a training stack changes in a device's coefficients.
// A profile's [time] and [memory] describe the GPU as lorasim's LibTorch runner drives it; the
// hf-peft stack (Transformers + PEFT) dispatches from Python, runs a different graph and holds
// different allocator slack, so its host, optimizer and memory terms are its own, fitted by
// running the stack itself (`lorasim calibrate --stack hf-peft`). The defaults below are the
// priors every profile without a [stack.hf-peft] table uses: the H200 calibration's values,
// rounded (hwprofiles/h200.toml, bench/results/h200/hf-peft-run7), treated like the datasheet
// priors' device-independent constants: host dispatch is the CPU's, the memory terms are counts.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "model/stack.h"

namespace lorasim::model {

struct HardwareModel;

struct StackTerms {
  // Host: the Python stack's dispatch, per micro-batch and per operator of model/hf_analytics.
  double host_fixed_s = 2.5e-3;              ///< per micro-batch (data to device, Python loop, hooks)
  double host_per_op_s = 2.5e-5;          ///< per dispatched operator (module calls included)
  double recompute_host_share = 2.5;      ///< checkpointing's recomputed forward, relative
  /// The device time of the stack's graph relative to the device's own terms evaluated on the
  /// stack's operators and bytes (extra casts, copies and kernels the counts miss).
  double device_scale = 1.07;
  /// The same for the LM head and the loss over the vocabulary (the stack's fp32 upcast, its
  /// log-softmax and their gradients run as separate kernels of their own).
  double head_device_scale = 0.82;
  // The optimizer: fused AdamW + gradient clipping (Trainer) or AdamW (a plain loop).
  double optimizer_fixed_s = 1.2e-3;         ///< host, per step
  double optimizer_per_tensor_s = 4.2e-5;    ///< host, per adapter tensor
  // Memory: multipliers on the counted terms (1 = the count is right), a constant, and the
  // caching allocator's slack.
  double saved_scale = 1.0;
  double logits_scale = 1.0;
  double workspace_bytes = 5.98e7;
  // The caching allocator's slack: reserved = allocated + overhead + activation share x (allocated
  // - static) + logits share x one half-precision logits tensor. Blocks freed between the
  // forward's and the backward's allocations leave gaps in proportion to the activations, and
  // the loss's vocabulary-sized transients leave their own.
  double reserved_scale = 1.0;  ///< x allocated (1: the slack terms below carry it; an anchored fit may move it)
  double reserved_overhead_bytes = 5.65e7;
  double reserved_activation_share = 0.0;
  double reserved_logits_share = 1.19;
  double expected_time_error = 0.3;       ///< typical relative step-time error of these terms
  double expected_memory_error = 0.05;
  // The step-time range (model/cost_model.h, StepTime::low_s/high_s): priors, never fitted.
  // The H200's host speed moved 18.5% at most (rms 7.3%) between processes of one lease and
  // its fitted host cost per operator 22% between leases (docs/cost-model.md, "Range").
  double host_spread = 0.20;    ///< relative deviation of the host's (Python dispatch) time
  double device_spread = 0.10;  ///< relative deviation of the device's time from the prediction
  bool calibrated = false;                ///< fitted from this stack's runs on this GPU
  std::string source = "prior";           ///< where the terms came from, for notes and files
};

/// One number of [stack.hf-peft]: its key, field, and the rule a profile value must satisfy.
struct StackTerm {
  const char* name;
  double StackTerms::*field;
  bool positive;  ///< must be > 0 (else >= 0)
  const char* why;
  bool fraction = false;  ///< must also be < 1 (a relative deviation)
};
/// Every number of [stack.hf-peft], in the order profiles write them.
const std::vector<StackTerm>& stack_term_table();
const StackTerm* find_stack_term(std::string_view name);

/// The device model a workload of `stack` runs on: for hf-peft, `hw` with the stack's host,
/// optimizer and memory terms in place of the runner's, its device scale applied and its
/// spreads; for lorasim, `hw` itself with both spreads its expected_time_error.
HardwareModel for_stack(const HardwareModel& hw, const StackSpec& stack);

}  // namespace lorasim::model
