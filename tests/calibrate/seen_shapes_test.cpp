// The new shapes a run's timed micro-batches meet (calibrate/seen_shapes.h): the process's shapes
// per model kind, the warm-up's met but not counted, as the Python probe counts them.
#include "calibrate/seen_shapes.h"

#include <gtest/gtest.h>

#include "model/architecture.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

TEST(SeenShapesTest, TheTimedMicroBatchesCountEachShapeTheProcessHadNotMet) {
  forget_shapes();
  ShapeTally t("kind");
  t.see(2, 16);  // the warm-up step's micro-batches: met, not counted
  t.see(2, 32);
  t.start_counting();
  // Step 1: 16 (warm-up's), 48 (new), 48 (met one micro-batch ago).
  t.see(2, 16);
  t.see(2, 48);
  t.see(2, 48);
  // Step 2: 32 (warm-up's), 64 (new), 1 row of 48 (a new shape: the rows differ).
  t.see(2, 32);
  t.see(2, 64);
  t.see(1, 48);
  t.stop_counting();
  t.see(2, 80);  // after the timed steps (the host/device split): met, not counted
  EXPECT_EQ(t.new_shapes(), 3);
  EXPECT_DOUBLE_EQ(new_shapes_per_step(t.new_shapes(), 2, true), 1.5);
}

TEST(SeenShapesTest, ARowOfOneWidthHasNoNewShapes) {
  forget_shapes();
  ShapeTally t("kind");
  t.start_counting();  // no warm-up: the one width is new once
  for (int i = 0; i < 4; ++i) t.see(4, 128);
  EXPECT_EQ(t.new_shapes(), 1);
  EXPECT_EQ(new_shapes_per_step(t.new_shapes(), 2, false), 0.0);
  EXPECT_THROW(new_shapes_per_step(1, 0, true), InputError);
}

TEST(SeenShapesTest, ASecondRunOfTheKindCountsOnlyShapesTheProcessHadNotMet) {
  forget_shapes();
  ShapeTally first("kind");
  first.start_counting();
  for (int64_t w : {16, 32, 48}) first.see(2, w);
  EXPECT_EQ(first.new_shapes(), 3);
  ShapeTally second("kind");
  second.start_counting();
  for (int64_t w : {48, 16, 64, 32, 64}) second.see(2, w);
  EXPECT_EQ(second.new_shapes(), 1);  // 64 only
  ShapeTally other("another kind");  // another model's kernels: every shape new to it
  other.start_counting();
  for (int64_t w : {16, 32}) other.see(2, w);
  EXPECT_EQ(other.new_shapes(), 2);
  forget_shapes();
  ShapeTally fresh("kind");
  fresh.start_counting();
  fresh.see(2, 16);
  EXPECT_EQ(fresh.new_shapes(), 1);
}

TEST(SeenShapesTest, TheKindIsTheModelsWidthNotItsDepth) {
  model::Workload w;
  w.arch = model::preset("qwen3-1.7b");
  const std::string kind = shape_kind(w, "cuda:0");
  model::Workload shallow = w;
  shallow.arch = model::truncated(w.arch, 4);
  EXPECT_EQ(shape_kind(shallow, "cuda:0"), kind);
  model::Workload rank = w;
  rank.lora.rank = w.lora.rank * 2;
  model::Workload precision = w;
  precision.train.precision = w.train.precision == model::Precision::bf16 ? model::Precision::fp32 : model::Precision::bf16;
  model::Workload wider = w;
  wider.arch = model::preset("qwen3-8b");
  for (const std::string& other : {shape_kind(rank, "cuda:0"), shape_kind(precision, "cuda:0"),
                                   shape_kind(wider, "cuda:0"), shape_kind(w, "cuda:1"), shape_kind(w, "cpu")})
    EXPECT_NE(other, kind);
}

}  // namespace
}  // namespace lorasim::calib
