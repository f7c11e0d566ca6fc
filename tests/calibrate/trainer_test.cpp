// Trainer on the CPU with the tiny preset: it learns, keeps the base frozen, accumulates
// gradients like one big micro-batch, survives out-of-memory, measures memory sensibly, and
// refuses what the machine cannot hold before allocating it.
#include "calibrate/runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "model/architecture.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

model::Workload tiny_workload(int64_t seq_len, bool grad_ckpt = false) {
  model::Workload w;
  w.arch = model::preset("tiny");
  w.lora.rank = 8;
  w.lora.alpha = 16;
  w.train.seq_len = seq_len;
  w.train.precision = model::Precision::fp32;
  w.train.grad_ckpt = grad_ckpt;
  return w;
}

RunSpec spec_for(const model::Workload& w, int64_t micro_batch, int64_t accumulation) {
  RunSpec s;
  s.workload = w;
  s.micro_batch = micro_batch;
  s.accumulation = accumulation;
  s.warmup_steps = 1;
  s.measure_steps = 1;
  return s;
}

double mean(const std::vector<double>& v, size_t from, size_t count) {
  return std::accumulate(v.begin() + from, v.begin() + from + count, 0.0) / count;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  double max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(a[i])));
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  EXPECT_GT(max_abs, 0.0) << "gradients are all zero: the comparison would prove nothing";
  EXPECT_LE(max_diff, tol * max_abs) << "largest difference " << max_diff << " of " << max_abs;
}

TEST(TrainerTest, LossFallsOnLearnableDataWhileBaseWeightsStayFrozen) {
  const auto w = tiny_workload(32);
  Trainer trainer(w, "cpu", 1);
  trainer.set_data(Trainer::Data::learnable);
  trainer.set_learning_rate(1e-2);
  trainer.snapshot_base_weights();
  RunSpec s = spec_for(w, 4, 1);
  s.warmup_steps = 0;
  s.measure_steps = 40;
  const RunResult r = trainer.run(s);
  ASSERT_FALSE(r.oom) << r.error;
  ASSERT_EQ(r.losses.size(), 40u);
  const double first = mean(r.losses, 0, 5), last = mean(r.losses, 35, 5);
  EXPECT_LT(last, first - 0.5) << "first steps " << first << ", last steps " << last;
  EXPECT_TRUE(trainer.base_weights_unchanged());
}

TEST(TrainerTest, AccumulationGivesTheGradientsOfOneBigMicroBatch) {
  Trainer trainer(tiny_workload(16), "cpu", 2);
  trainer.randomize_adapters(3);  // nonzero B, so A's gradients are compared too
  const auto split = trainer.accumulated_gradients(2, 3, 16, 7);
  const auto whole = trainer.accumulated_gradients(6, 1, 16, 7);
  expect_close(split, whole, 1e-4);
}

TEST(TrainerTest, OutOfMemoryIsReportedAndTheTrainerStaysUsable) {
  const auto w = tiny_workload(32);
  Trainer trainer(w, "cpu", 4);
  RunSpec s = spec_for(w, 4, 1);
  s.memory_limit_bytes = 1;  // any allocation fails
  const RunResult failed = trainer.run(s);
  EXPECT_TRUE(failed.oom);
  EXPECT_NE(failed.error.find("out of memory"), std::string::npos) << failed.error;

  s.memory_limit_bytes = 0;
  const RunResult ok = trainer.run(s);
  EXPECT_FALSE(ok.oom) << ok.error;
  EXPECT_GT(ok.step_time_s, 0);
  EXPECT_GT(ok.peak_allocated_bytes, 0);
}

TEST(TrainerTest, OutOfMemoryMidStepIsSurvived) {
  const auto w = tiny_workload(32);
  Trainer trainer(w, "cpu", 4);
  const RunResult small = trainer.run(spec_for(w, 1, 1));
  ASSERT_FALSE(small.oom) << small.error;
  RunSpec s = spec_for(w, 8, 1);
  s.memory_limit_bytes = small.peak_allocated_bytes;  // enough for weights, not for b = 8
  EXPECT_TRUE(trainer.run(s).oom);
  s.memory_limit_bytes = 0;
  EXPECT_FALSE(trainer.run(s).oom);
}

TEST(TrainerTest, PeakMemoryGrowsWithMicroBatch) {
  const auto w = tiny_workload(32);
  Trainer trainer(w, "cpu", 5);
  const RunResult one = trainer.run(spec_for(w, 1, 2));
  const RunResult four = trainer.run(spec_for(w, 4, 1));
  ASSERT_FALSE(one.oom || four.oom);
  EXPECT_GT(four.peak_allocated_bytes, one.peak_allocated_bytes);
  EXPECT_EQ(four.peak_reserved_bytes, four.peak_allocated_bytes);  // CPU: no cache
  EXPECT_GT(four.micro_batch_time_s, 0);
  EXPECT_EQ(four.device_time_s, four.micro_batch_time_s);
  EXPECT_TRUE(std::isnan(four.host_time_s));
  EXPECT_EQ(four.seq_len, 32);
  EXPECT_EQ(four.num_layers, w.arch.num_layers);
}

TEST(TrainerTest, GradientCheckpointingKeepsGradientsAndLowersPeak) {
  auto plain_w = tiny_workload(32, false);
  auto ckpt_w = tiny_workload(32, true);
  // Four blocks make the saved activations a visible share of the peak.
  plain_w.arch.num_layers = ckpt_w.arch.num_layers = 4;
  std::vector<float> plain_grads, ckpt_grads;
  RunResult plain_run, ckpt_run;
  {
    Trainer plain(plain_w, "cpu", 6);
    plain.randomize_adapters(8);
    plain_grads = plain.accumulated_gradients(2, 2, 32, 9);
    plain_run = plain.run(spec_for(plain_w, 4, 1));
  }
  {
    Trainer ckpt(ckpt_w, "cpu", 6);
    ckpt.randomize_adapters(8);
    ckpt_grads = ckpt.accumulated_gradients(2, 2, 32, 9);
    ckpt_run = ckpt.run(spec_for(ckpt_w, 4, 1));
  }
  expect_close(ckpt_grads, plain_grads, 1e-5);
  ASSERT_FALSE(plain_run.oom || ckpt_run.oom);
  EXPECT_LT(ckpt_run.peak_allocated_bytes, plain_run.peak_allocated_bytes);
}

TEST(TrainerTest, RunWithAnotherModelThrowsInputError) {
  const auto w = tiny_workload(16);
  Trainer trainer(w, "cpu");
  auto other = w;
  other.lora.rank = 4;
  EXPECT_THROW(trainer.run(spec_for(other, 1, 1)), InputError);
  auto longer = w;
  longer.train.seq_len = 24;  // only the sequence length may change
  EXPECT_FALSE(trainer.run(spec_for(longer, 1, 1)).oom);
}

TEST(TrainerTest, StopRequestEndsTheRunBeforeTheNextMicroBatch) {
  const auto w = tiny_workload(16);
  Trainer trainer(w, "cpu", 10);
  RunSpec s = spec_for(w, 1, 4);  // 1 warm-up + 3 measured steps of 4 micro-batches: 16 in all
  s.measure_steps = 3;
  int polls = 0;
  s.should_stop = [&] { return ++polls == 6; };  // the second micro-batch of the second step
  EXPECT_THROW(trainer.run(s), RunInterrupted);
  EXPECT_EQ(polls, 6) << "micro-batches ran after the stop was asked";
  s.should_stop = {};
  const RunResult r = trainer.run(s);  // the trainer stays usable
  EXPECT_FALSE(r.oom) << r.error;
  EXPECT_EQ(r.losses.size(), 4u);
}

// Printed "cannot create std::vector larger than max_size()": micro-batch x sequence length wrapped.
TEST(TrainerTest, CountsBeyondTheBoundsAreInputErrorsNamingTheQuantity) {
  const auto w = tiny_workload(16);
  Trainer trainer(w, "cpu");
  try {
    trainer.run(spec_for(w, INT64_MAX, 1));
    FAIL() << "a micro-batch of INT64_MAX ran";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "a micro-batch of 9223372036854775807 sequences is more than a run takes (at most 1048576)");
  }
  try {
    trainer.run(spec_for(w, 1, INT64_MAX));
    FAIL() << "an accumulation of INT64_MAX ran";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "an accumulation of 9223372036854775807 micro-batches is more than a run takes (at most 1048576)");
  }
  EXPECT_FALSE(trainer.run(spec_for(w, 1, 1)).oom);  // the trainer stays usable
}

// Was killed by the kernel's OOM killer with no message: 10^10 sequences' token ids alone are
// 4.7 TiB. Refused as an out-of-memory before anything is allocated, within a second.
TEST(TrainerTest, RunNeedingMoreHostMemoryThanTheMachineHasIsNotStarted) {
  const auto w = tiny_workload(64);
  Trainer trainer(w, "cpu");
  const auto start = std::chrono::steady_clock::now();
  const RunResult r = trainer.run(spec_for(w, 100000, 100000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(r.oom);
  const std::string head = "not run: micro-batch 100000 x accumulation 100000 at sequence length 64 needs at least ";
  EXPECT_EQ(r.error.substr(0, head.size()), head) << r.error;
  EXPECT_NE(r.error.find(" of host memory (weights and optimizer state "), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("the step's token ids 4.66 TiB), and the machine has "), std::string::npos) << r.error;
  EXPECT_EQ(r.error.substr(r.error.size() - 10), " available") << r.error;
  EXPECT_FALSE(trainer.run(spec_for(w, 2, 2)).oom);  // the trainer stays usable
}

// A model whose weights alone exceed the machine was built tensor by tensor until the kernel
// killed the process (13 TB of fp32 weights here, within every architecture bound).
TEST(TrainerTest, ModelLargerThanTheMachineIsRefusedBeforeBuilding) {
  model::Workload w = tiny_workload(16);
  w.arch.num_layers = 1024;
  w.arch.hidden_size = 16384;
  w.arch.intermediate_size = 65536;
  try {
    Trainer trainer(w, "cpu");
    FAIL() << "built";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("the model 'tiny' needs at least ", 0), 0u) << what;
    EXPECT_NE(what.find(" for its weights, adapters and optimizer state in fp32, and the machine has "),
              std::string::npos) << what;
  }
}

}  // namespace
}  // namespace lorasim::calib
