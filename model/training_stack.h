// A training stack as the cost model sees it: what one micro-batch of a workload dispatches,
// computes, moves and saves under that stack (model::Features), and the few words the simulator
// says about its figures, and what the command line may ask of it. One implementation per stack
// (model/stacks/), found by kind or name in a registry; its coefficients are the table's rows
// (model/coefficients.h): the device's entries, and entries of its own where it has them. A new
// stack is one file of features, a line in the registry (or register_stack) and its own entries.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/analytics.h"
#include "model/coefficients.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace lorasim::model {

/// How `lorasim calibrate --stack NAME` measures a stack.
enum class StackCalibration {
  runner,    ///< lorasim's LibTorch runner runs it (calibrate/): `lorasim calibrate`, `measure`
  hf_probe,  ///< the Python probe (python/lorasim_hf) runs it: `lorasim calibrate --stack NAME`
  none,      ///< lorasim cannot run it: its rows are priors, or fitted from recorded runs (`lorasim fit`)
};

class TrainingStack {
 public:
  virtual ~TrainingStack() = default;
  /// Its place in the registry (register_stack sets it).
  StackKind kind() const { return kind_; }
  virtual const char* name() const = 0;  ///< "hf-peft", "lorasim"
  /// Other names --stack takes for it ("hf").
  virtual std::vector<std::string> aliases() const { return {}; }
  /// What it is, in the list of stacks an unknown name is told ("Transformers/TRL + PEFT"; "": none).
  virtual std::string summary() const { return ""; }
  /// The stack whose rows it reads where it has no entry of its own (nullptr: the device's), and
  /// whose values its own rows take on a profile that holds none of them: a stack that runs the
  /// same model code under another loop (Lightning's over Transformers + PEFT) differs in the
  /// loop's terms only, and until it is calibrated its best figures are its base's on that GPU.
  virtual const char* base_stack() const { return nullptr; }

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

  /// How its calibration runs.
  virtual StackCalibration calibration() const = 0;
  /// "" when it trains on a base quantized by bitsandbytes in `format` ("nf4"), else why not, in
  /// one line that names a stack that does.
  virtual std::string quantized_base_refusal(const std::string&) const { return ""; }
  /// Whether its half-precision training is mixed precision (Trainer's bf16/fp16 flag).
  virtual bool mixed_precision(const StackSpec& spec) const = 0;
  /// How its program is told a split, where not by Hugging Face's TrainingArguments (whose flags
  /// the command line writes): one line, "" for TrainingArguments.
  virtual std::string split_settings(const Workload&, int64_t /*micro_batch*/, int64_t /*accumulation*/,
                                     bool /*grad_ckpt*/) const {
    return "";
  }

  // The simulator's notes about this stack's figures ("" for none); percentages come formatted.
  /// Its own rows are priors (its section is not calibrated on this device).
  virtual std::string prior_note(const std::string& device_name, const std::string& time_error) const = 0;
  /// What its reserved memory assumes (the allocator, the worst case's slack).
  virtual std::string memory_note(const StackSpec& spec, bool asynchronous, const std::string& memory_error) const = 0;
  /// When some split is host-bound: how far such times may stray.
  virtual std::string host_bound_note(const std::string& host_spread) const = 0;

 private:
  friend class StackRegistry;
  StackKind kind_;
};

/// The stack object of `kind`.
const TrainingStack& training_stack(StackKind kind);
/// The stack named `name` (or one of its aliases), or nullptr.
const TrainingStack* find_stack(std::string_view name);
/// How many stacks there are: the built-in ones (hf-peft, lorasim), then those registered.
int stack_count();
/// The stack whose calibration fits the device's rows (calibrates_device: lorasim's runner).
StackKind device_stack();
/// Adds a stack and returns its kind; its rows' entries come with model::add_stack_entry, and
/// every row it names none of it reads as the device's. Call it before any HardwareModel it is
/// to predict with is built (or complete_values). Throws InputError for a name already taken.
StackKind register_stack(std::unique_ptr<TrainingStack> stack);

}  // namespace lorasim::model
