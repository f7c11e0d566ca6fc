// Distinct padded shapes among random micro-batches: exact small cases, every padding mode, and
// the formula against seeded brute-force sampling.
#include "model/new_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "model/error.h"
#include "model/lengths.h"

using namespace lorasim::model;
using lorasim::InputError;

namespace {

LengthDistribution two_lengths() { return LengthDistribution::from_bins({{100, 1}, {200, 1}}); }

}  // namespace

TEST(NewShapesTest, OneShapeIsMetOnce) {
  const LengthDistribution d = LengthDistribution::fixed(512);
  EXPECT_EQ(expected_new_shapes(d, Padding{}, 4, 0), 0.0);
  EXPECT_EQ(expected_new_shapes(d, Padding{}, 4, 1), 1.0);
  EXPECT_EQ(expected_new_shapes(d, Padding{}, 4, 1000), 1.0);
}

TEST(NewShapesTest, SingleSequencesMeetEachLengthWithItsShare) {
  // p = 1/2 each: 2 (1 - (1/2)^2) = 1.5 after two micro-batches.
  EXPECT_DOUBLE_EQ(expected_new_shapes(two_lengths(), Padding{}, 1, 2), 1.5);
}

TEST(NewShapesTest, TheLongestOfTheMicroBatchSetsItsShape) {
  // b = 2: P(longest = 100) = F(100)^2 = 1/4, P(200) = 3/4; three micro-batches:
  // (1 - (3/4)^3) + (1 - (1/4)^3) = 0.578125 + 0.984375.
  EXPECT_DOUBLE_EQ(expected_new_shapes(two_lengths(), Padding{}, 2, 3), 1.5625);
}

TEST(NewShapesTest, PaddingToOneLengthGivesOneShape) {
  const LengthDistribution d = LengthDistribution::from_bins({{100, 3}, {120, 5}, {700, 2}});
  EXPECT_EQ(expected_new_shapes(d, parse_padding("max_length"), 4, 50), 1.0);
  EXPECT_EQ(expected_new_shapes(d, parse_padding("packed"), 4, 50), 1.0);
  // Rounding up to 128 merges 100 and 120; 700 becomes 768.
  const LengthDistribution near = LengthDistribution::from_bins({{100, 1}, {120, 1}});
  EXPECT_EQ(expected_new_shapes(near, parse_padding("multiple:128"), 1, 10), 1.0);
}

TEST(NewShapesTest, GroupingByLengthCountsTheGroupsWidths) {
  // Sorted groups of 2: {100,100} {100,100} {200,200} {200,200}: p = 1/2 each.
  const LengthDistribution d = LengthDistribution::from_bins({{100, 4}, {200, 4}});
  EXPECT_DOUBLE_EQ(expected_new_shapes(d, Padding{}, 2, 2, true), 1.5);
}

TEST(NewShapesTest, PaddingFreeSingleSequencesAreTheData) {
  EXPECT_DOUBLE_EQ(expected_new_shapes(two_lengths(), parse_padding("padding-free"), 1, 2), 1.5);
  // Larger micro-batches: nearly every sum is new in a short run, never more than the run.
  const LengthDistribution d = LengthDistribution::from_bins({{50, 10}, {300, 10}, {900, 10}});
  const double n = expected_new_shapes(d, parse_padding("padding-free"), 8, 20);
  EXPECT_GT(n, 18.0);
  EXPECT_LE(n, 20.0);
}

TEST(NewShapesTest, MatchesSeededSampling) {
  const LengthDistribution d = LengthDistribution::from_bins({{64, 40}, {128, 25}, {300, 20}, {512, 10}, {1024, 5}});
  const int64_t b = 4, k = 12;
  std::vector<int64_t> pool;
  for (const LengthBin& bin : d.bins()) pool.insert(pool.end(), static_cast<size_t>(bin.count), bin.length_tokens);
  std::mt19937_64 g(7);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  const int trials = 20000;
  double total = 0;
  for (int t = 0; t < trials; ++t) {
    std::set<int64_t> seen;
    for (int64_t m = 0; m < k; ++m) {
      int64_t longest = 0;
      for (int64_t i = 0; i < b; ++i) longest = std::max(longest, pool[pick(g)]);  // with replacement
      seen.insert(longest);
    }
    total += static_cast<double>(seen.size());
  }
  EXPECT_NEAR(expected_new_shapes(d, Padding{}, b, k), total / trials, 0.02);
}

TEST(NewShapesTest, RefusesANonPositiveMicroBatchOrNegativeCount) {
  EXPECT_THROW(expected_new_shapes(two_lengths(), Padding{}, 0, 1), InputError);
  EXPECT_THROW(expected_new_shapes(two_lengths(), Padding{}, 1, -1), InputError);
}
