// A run's recorded padded widths, predicted exactly: against the cost model called width by
// width, against simulate() for one width, and the refusals.
#include "simulator/simulate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "simulator/lengths_sim.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

sim::Request request(int64_t B) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.seq_len = 1024;
  r.hardware = test_gpu();
  r.effective_batch = B;
  return r;
}

model::CostModel cost_at(const sim::Request& r, int64_t seq_len) {
  model::Workload w = r.workload;
  w.train.seq_len = seq_len;
  return model::CostModel(w, r.hardware);
}

}  // namespace

TEST(MeasuredLengthsTest, TheStepIsTheCostModelAtEachRecordedWidthAndThePeakAtTheLargest) {
  for (model::AllocatorMode alloc : {model::AllocatorMode::default_segments, model::AllocatorMode::expandable}) {
    sim::Request r = request(16);
    r.workload.stack.allocator = alloc;
    const model::PaddedWidths widths = {{256, 4}, {512, 8}, {1024, 4}};
    const sim::Result res = sim::simulate_measured_widths(r, 2, widths);
    ASSERT_EQ(res.splits.size(), 1u);
    const sim::Split& s = res.splits[0];
    EXPECT_EQ(s.micro_batch, 2);
    EXPECT_EQ(s.accumulation, 8);

    // The cost model called directly: the mean over the 16 micro-batches of 2 rows at each
    // width, the first of a step not accumulating and the other 7 accumulating.
    double h0 = 0, d0 = 0, h1 = 0, d1 = 0;
    for (const auto& w : widths) {
      const model::CostModel c = cost_at(r, w.width_tokens);
      h0 += w.micro_batches * c.micro_batch(2, false).host_s;
      d0 += w.micro_batches * c.micro_batch(2, false).device_s;
      h1 += w.micro_batches * c.micro_batch(2, true).host_s;
      d1 += w.micro_batches * c.micro_batch(2, true).device_s;
    }
    const model::CostModel widest = cost_at(r, 1024);
    const model::StepTime st = widest.step_of(h0 / 16 + 7 * (h1 / 16) + widest.optimizer().host_s,
                                              d0 / 16 + 7 * (d1 / 16) + widest.optimizer().device_s);
    EXPECT_DOUBLE_EQ(s.step_time_s, st.total_s);
    EXPECT_DOUBLE_EQ(s.step_time_low_s, st.low_s);
    EXPECT_DOUBLE_EQ(s.step_time_high_s, st.high_s);
    EXPECT_DOUBLE_EQ(s.host_time_s, h0 / 16);
    EXPECT_DOUBLE_EQ(s.device_time_s, d0 / 16);
    // Between the figures of its shortest and longest width: the widths were priced.
    EXPECT_LT(s.step_time_s, cost_at(r, 1024).step_time_s(2, 8));
    EXPECT_GT(s.step_time_s, cost_at(r, 256).step_time_s(2, 8));

    const model::MemoryEstimate m = widest.memory(2);
    const double activations = m.peak_allocated_bytes - cost_at(r, 1).memory(1).peak_allocated_bytes;
    EXPECT_DOUBLE_EQ(s.peak_allocated_bytes, m.peak_allocated_bytes);
    EXPECT_DOUBLE_EQ(s.peak_reserved_bytes, m.peak_reserved_bytes + sim::varying_shape_share(model::resolve(r.hardware, r.workload.stack.kind), alloc, false) * activations);
    EXPECT_DOUBLE_EQ(s.worst_reserved_bytes, m.worst_reserved_bytes + sim::varying_shape_share(model::resolve(r.hardware, r.workload.stack.kind), alloc, true) * activations);
    EXPECT_EQ(s.fits, s.worst_reserved_bytes <= res.usable_memory_bytes);
    EXPECT_EQ(res.recommended.has_value(), s.fits);
  }
}

TEST(MeasuredLengthsTest, OneWidthGivesSimulatesFiguresAtThatLength) {
  sim::Request r = request(16);
  r.workload.train.seq_len = 768;
  const sim::Result fixed = sim::simulate(r);
  for (const sim::Split& f : fixed.splits) {
    r.workload.train.seq_len = 1;  // ignored: the widths say what the tensors held
    const sim::Result m = sim::simulate_measured_widths(r, f.micro_batch, {{768, 5 * f.accumulation}});
    r.workload.train.seq_len = 768;
    const sim::Split& s = m.splits.at(0);
    EXPECT_DOUBLE_EQ(s.step_time_s, f.step_time_s) << f.micro_batch;
    EXPECT_DOUBLE_EQ(s.micro_batch_time_s, f.micro_batch_time_s);
    EXPECT_EQ(s.peak_allocated_bytes, f.peak_allocated_bytes);
    EXPECT_EQ(s.peak_reserved_bytes, f.peak_reserved_bytes);  // one shape: no allocator hold added
    EXPECT_EQ(s.worst_reserved_bytes, f.worst_reserved_bytes);
    EXPECT_EQ(s.fits, f.fits);
    EXPECT_EQ(m.usable_memory_bytes, fixed.usable_memory_bytes);
  }
}

TEST(MeasuredLengthsTest, RefusesAMicroBatchOutsideTheBatchAndABrokenHistogram) {
  const sim::Request r = request(16);
  EXPECT_THROW(sim::simulate_measured_widths(r, 3, {{512, 1}}), InputError);
  EXPECT_THROW(sim::simulate_measured_widths(r, 0, {{512, 1}}), InputError);
  EXPECT_THROW(sim::simulate_measured_widths(r, 2, {}), InputError);
  EXPECT_THROW(sim::simulate_measured_widths(r, 2, {{1024, 1}, {512, 1}}), InputError);
  EXPECT_THROW(sim::simulate_measured_widths(r, 2, {{512, 0}}), InputError);
}

TEST(MeasuredLengthsTest, EachNewShapeOfAStepAddsTheProfilesNewShapeCost) {
  sim::Request r = request(16);
  r.workload.stack = model::StackSpec{};  // hf-peft, whose new_shape_s was measured
  const model::PaddedWidths widths = {{256, 6}, {512, 5}, {1024, 5}};
  const sim::Result steady = sim::simulate_measured_widths(r, 2, widths);
  const sim::Result fresh = sim::simulate_measured_widths(r, 2, widths, 1.5);
  const double per_shape = model::resolve(r.hardware, model::StackKind::hf_peft).new_shape_s;
  ASSERT_GT(per_shape, 0);
  EXPECT_DOUBLE_EQ(fresh.splits[0].step_time_s, steady.splits[0].step_time_s + 1.5 * per_shape);
  EXPECT_DOUBLE_EQ(fresh.splits[0].step_time_high_s, steady.splits[0].step_time_high_s + 1.5 * per_shape);
  EXPECT_EQ(fresh.splits[0].peak_reserved_bytes, steady.splits[0].peak_reserved_bytes);  // time only
}
