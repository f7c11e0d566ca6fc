// A third training stack added from this file alone: its features (a TrainingStack), its
// registration, and its own entries in the coefficient table. Every other row it reads as the
// device's. The simulator predicts it with no other file changed.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/training_stack.h"
#include "simulator/note_text.h"
#include "simulator/simulate.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;

namespace {

// A made-up Python loop around lorasim's operators that calls each one through a wrapper: the
// runner's counts with twice its operators dispatched, and a host cost per micro-batch of its own.
class ToyStack final : public model::TrainingStack {
 public:
  const char* name() const override { return "toy"; }
  std::string summary() const override { return "a test's stack"; }
  model::StackSpec default_spec() const override {
    model::StackSpec s;
    s.kind = kind();
    s.allocator = model::AllocatorMode::expandable;
    s.autocast = false;
    return s;
  }
  void validate(const model::StackSpec& spec) const override {
    if (spec.autocast) throw InputError("the toy stack runs without autocast", "stack");
  }
  std::string describe(const model::StackSpec&) const override { return "toy (a test's stack)"; }
  double memory_bound_bytes(const model::Workload& w, int64_t b) const override { return model::memory_bound_bytes(w, b); }
  double loss_bytes(const model::Workload& w, int64_t b) const override { return model::loss_bytes(w, b); }
  double host_ops(const model::Workload& w) const override { return 2 * model::host_ops_per_micro_batch(w); }
  double recompute_ops(const model::Workload& w) const override { return 2 * model::recompute_ops_per_micro_batch(w); }
  model::ActivationMemory activation_memory(const model::Workload& w, int64_t b) const override {
    return model::activation_memory(w, b);
  }
  double extra_static_bytes(const model::Workload&) const override { return 0.0; }
  bool calibrates_device() const override { return false; }
  model::StackCalibration calibration() const override { return model::StackCalibration::none; }
  bool mixed_precision(const model::StackSpec&) const override { return true; }
  std::string prior_note(const std::string& device, const std::string& error) const override {
    return "the toy stack's terms of '" + device + "' are priors: off by ~" + error;
  }
  std::string memory_note(const model::StackSpec&, bool, const std::string&) const override { return ""; }
  std::string host_bound_note(const std::string&) const override { return ""; }
};

// Its entries: a host cost per micro-batch and an expected error of its own, in [stack.toy].
model::StackKind toy() {
  static const model::StackKind kind = [] {
    const model::StackKind k = model::register_stack(std::make_unique<ToyStack>());
    model::add_stack_entry("host_fixed_s", "toy", {"stack.toy", 0.05, model::Range::non_negative, model::Fit::linear});
    model::add_stack_entry("expected_time_error", "toy",
                           {"stack.toy", 0.4, model::Range::relative_error, model::Fit::never});
    return k;
  }();
  return kind;
}

sim::Request request(model::StackKind stack) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.seq_len = 512;
  r.workload.stack = model::training_stack(stack).default_spec();
  r.hardware = lorasim::testing::test_gpu();  // built after the registration: it holds the toy's values
  r.effective_batch = 16;
  return r;
}

}  // namespace

TEST(ToyStackTest, IsFoundByNameAndParsed) {
  const model::StackKind k = toy();
  EXPECT_EQ(k.index, 3);  // after hf-peft, lorasim and lightning
  EXPECT_EQ(model::parse_stack("toy"), k);
  EXPECT_STREQ(model::stack_name(k), "toy");
  EXPECT_EQ(model::find_stack("toy"), &model::training_stack(k));
  try {
    model::parse_stack("trl");
    FAIL() << "an unknown stack parsed";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown stack 'trl': allowed are hf-peft (Transformers/TRL + PEFT), lorasim, lightning "
                           "(PyTorch Lightning + Transformers + PEFT) and toy (a test's stack)");
  }
  EXPECT_THROW(model::register_stack(std::make_unique<ToyStack>()), InputError);  // its name is taken
}

TEST(ToyStackTest, ReadsItsOwnEntriesAndTheDevicesForTheRest) {
  const sim::Request r = request(toy());
  const model::Coefficients own = model::resolve(r.hardware, toy());
  const model::Coefficients runner = model::resolve(r.hardware, model::StackKind::lorasim);
  EXPECT_EQ(own.host_fixed_s, 0.05);         // its [stack.toy] prior
  EXPECT_EQ(runner.host_fixed_s, 1e-3);      // the device's, which test_gpu set
  EXPECT_EQ(own.expected_time_error, 0.4);
  EXPECT_EQ(own.host_spread, 0.4);           // the device's entry: the same as expected_time_error, its own
  EXPECT_EQ(own.host_per_op_s, 8e-6);        // rows it names no entry in: the device's values
  EXPECT_EQ(own.gemm_tflops, 500);
  EXPECT_EQ(own.device_scale, 1.0);          // and the device's fixed priors
  // Only its own entries are its to fit and store.
  EXPECT_TRUE(model::find_coefficient("host_fixed_s")->owned_by(toy()));
  EXPECT_FALSE(model::find_coefficient("host_per_op_s")->owned_by(toy()));
  EXPECT_EQ(model::find_coefficient("host_per_op_s")->in(toy()).fit, model::Fit::never);
}

TEST(ToyStackTest, SimulatesWithItsFeaturesAndEntries) {
  const sim::Request r = request(toy());
  const sim::Result toy_result = sim::simulate(r);
  const sim::Result runner_result = sim::simulate(request(model::StackKind::lorasim));
  ASSERT_EQ(toy_result.splits.size(), 5u);  // 1, 2, 4, 8, 16
  ASSERT_EQ(runner_result.splits.size(), 5u);
  const model::CostModel cost(r.workload, r.hardware);
  for (size_t i = 0; i < toy_result.splits.size(); ++i) {
    const sim::Split& s = toy_result.splits[i];
    // One micro-batch's host time: its own fixed cost plus the device's per-operator cost over twice
    // the runner's operators.
    const double ops = 2 * model::host_ops_per_micro_batch(r.workload);
    EXPECT_DOUBLE_EQ(cost.micro_batch(s.micro_batch).host_s, 0.05 + 8e-6 * ops) << s.micro_batch;
    EXPECT_DOUBLE_EQ(s.step_time_s, cost.step(s.micro_batch, s.accumulation).total_s) << s.micro_batch;
    EXPECT_GT(s.step_time_s, runner_result.splits[i].step_time_s) << s.micro_batch;
    // The same memory: the runner's activations, the device's memory rows.
    EXPECT_EQ(s.peak_reserved_bytes, runner_result.splits[i].peak_reserved_bytes) << s.micro_batch;
  }
  ASSERT_TRUE(toy_result.recommended.has_value());
  // Its own rows are priors on this GPU: the simulator says so in the stack's words.
  bool prior_note = false;
  for (const std::string& n : sim::note_texts(r, toy_result))
    prior_note = prior_note || n.rfind("the toy stack's terms of 'test-gpu' are priors: off by ~", 0) == 0;
  EXPECT_TRUE(prior_note);
}
