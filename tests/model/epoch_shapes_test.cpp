// Distinct shapes of runs drawn without replacement: exact cases a shuffle cannot change, and
// the gap to independent draws that made an epoch's new shapes too few.
#include "model/epoch_shapes.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/error.h"
#include "model/lengths.h"
#include "model/new_shapes.h"

using namespace lorasim::model;
using lorasim::InputError;

namespace {

/// `n` sequences of `n` distinct lengths 1..n.
LengthDistribution distinct_lengths(int64_t n) {
  std::vector<LengthBin> bins;
  for (int64_t l = 1; l <= n; ++l) bins.push_back({l, 1});
  return LengthDistribution::from_bins(bins);
}

}  // namespace

TEST(EpochShapesTest, AnEpochAtMicroBatchOneMeetsEveryLength) {
  // Every sequence comes once: 512 shapes. Independent draws meet 1 - (1 - 1/512)^512 of each.
  const LengthDistribution d = distinct_lengths(512);
  EXPECT_DOUBLE_EQ(epoch_new_shapes(d, Padding{}, 1, 512), 512.0);
  EXPECT_NEAR(expected_new_shapes(d, Padding{}, 1, 512), 512 * 0.6325, 0.5);
}

TEST(EpochShapesTest, GroupedEpochMeetsEveryGroupOnce) {
  // Sorted and cut into groups of 2: widths 2, 4, ..., 512, one each.
  const LengthDistribution d = distinct_lengths(512);
  EXPECT_DOUBLE_EQ(epoch_new_shapes(d, Padding{}, 2, 256, true), 256.0);
}

TEST(EpochShapesTest, RemainderIsAShapeOfItsOwn) {
  // Three sequences of one length at micro-batch 2: rows of 2, then a last micro-batch of 1.
  const LengthDistribution d = LengthDistribution::from_bins({{64, 3}});
  EXPECT_DOUBLE_EQ(epoch_new_shapes(d, Padding{}, 2, 1), 1.0);
  EXPECT_DOUBLE_EQ(epoch_new_shapes(d, Padding{}, 2, 2), 2.0);
}

TEST(EpochShapesTest, OneShapeModesAndNoMicroBatch) {
  const LengthDistribution d = distinct_lengths(64);
  EXPECT_EQ(epoch_new_shapes(d, parse_padding("max_length"), 4, 50), 1.0);
  EXPECT_EQ(epoch_new_shapes(d, parse_padding("packed"), 4, 50), 1.0);
  EXPECT_EQ(epoch_new_shapes(d, Padding{}, 4, 0), 0.0);
  EXPECT_EQ(epoch_new_shapes(LengthDistribution::fixed(512), Padding{}, 4, 1000), 1.0);
}

TEST(EpochShapesTest, PaddingFreeShapeIsTheTokenTotal) {
  // Two sequences of 1 and 3 tokens at micro-batch 2: one row of 4 tokens, whatever the order.
  const LengthDistribution d = LengthDistribution::from_bins({{1, 1}, {3, 1}});
  EXPECT_DOUBLE_EQ(epoch_new_shapes(d, parse_padding("padding-free"), 2, 5), 1.0);
}

TEST(EpochShapesTest, WithoutReplacementMeetsAtLeastAsManyAndIsSeeded) {
  const LengthDistribution d = distinct_lengths(512);
  const double once = epoch_new_shapes(d, Padding{}, 2, 256, false, 7);
  EXPECT_EQ(once, epoch_new_shapes(d, Padding{}, 2, 256, false, 7));
  EXPECT_GT(once, expected_new_shapes(d, Padding{}, 2, 256) + 20);
  EXPECT_LE(once, 256.0);
}

TEST(EpochShapesTest, RejectsBadCounts) {
  EXPECT_THROW(epoch_new_shapes(distinct_lengths(4), Padding{}, 0, 1), InputError);
  EXPECT_THROW(epoch_new_shapes(distinct_lengths(4), Padding{}, 1, -1), InputError);
}

TEST(EpochShapesTest, SharedShufflesGiveTheFunctionsFiguresInAnyOrder) {
  // One object serves every micro-batch size from its kept shuffle; each figure must be the one
  // a fresh call draws, whichever calls came before (whole and partial first shuffles, several
  // epochs, grouped or not, one repetition or many).
  std::vector<LengthBin> bins;
  for (int64_t l = 1; l <= 300; ++l) bins.push_back({l * 3, 1 + l % 7});
  const LengthDistribution d = LengthDistribution::from_bins(bins);
  EpochShapes shared(d, 11);
  for (bool grouped : {false, true})
    for (int64_t b : {64, 1, 7, 3})
      for (int64_t runs : {5, 400, 3000})
        EXPECT_EQ(shared.new_shapes(Padding{}, b, runs, grouped), epoch_new_shapes(d, Padding{}, b, runs, grouped, 11))
            << "b " << b << " runs " << runs << " grouped " << grouped;
}
