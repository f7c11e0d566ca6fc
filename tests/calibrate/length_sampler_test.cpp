// The runner's sampler of micro-batches from a lengths file: every sequence once per pass, in
// a seeded order, padded to the collation's width.
#include "calibrate/length_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "model/error.h"

namespace lorasim::calib {
namespace {

model::LengthDistribution data() { return model::LengthDistribution::from_bins({{37, 5}, {256, 6}, {1000, 1}}); }

TEST(LengthSamplerTest, APassHoldsEverySequenceOnceAndThePadsFollowTheLongest) {
  LengthSampler s(data(), model::Padding{}, 7);
  for (int pass = 0; pass < 3; ++pass) {
    std::map<int64_t, int64_t> seen;
    for (int k = 0; k < 4; ++k) {
      const SampledMicroBatch mb = s.next(3);
      ASSERT_EQ(mb.lengths_tokens.size(), 3u);
      EXPECT_EQ(mb.width_tokens, *std::max_element(mb.lengths_tokens.begin(), mb.lengths_tokens.end()));
      int64_t real = 0;
      for (int64_t l : mb.lengths_tokens) {
        ++seen[l];
        real += l;
      }
      EXPECT_EQ(mb.real_tokens(), real);
    }
    EXPECT_EQ(seen, (std::map<int64_t, int64_t>{{37, 5}, {256, 6}, {1000, 1}})) << pass;
  }
}

TEST(LengthSamplerTest, TheSeedFixesTheOrderAndAnotherSeedGivesAnother) {
  auto order = [](uint64_t seed) {
    LengthSampler s(data(), model::Padding{}, seed);
    std::vector<int64_t> all;
    for (int k = 0; k < 12; ++k) all.push_back(s.next(1).lengths_tokens[0]);
    return all;
  };
  EXPECT_EQ(order(3), order(3));
  EXPECT_NE(order(3), order(4));
  // The next pass is drawn again, not the first one repeated.
  LengthSampler s(data(), model::Padding{}, 3);
  std::vector<int64_t> first, second;
  for (int k = 0; k < 12; ++k) first.push_back(s.next(1).lengths_tokens[0]);
  for (int k = 0; k < 12; ++k) second.push_back(s.next(1).lengths_tokens[0]);
  EXPECT_NE(first, second);
}

TEST(LengthSamplerTest, WidthsFollowTheCollationAndTruncation) {
  const model::LengthDistribution cut = data().truncated(512);
  LengthSampler longest(cut, model::Padding{}, 1), multiple(cut, model::Padding::multiple_of(100), 1),
      max_length(cut, model::Padding{model::PaddingMode::max_length, 0}, 1);
  for (int k = 0; k < 40; ++k) {
    const SampledMicroBatch a = longest.next(2), b = multiple.next(2), c = max_length.next(2);
    EXPECT_EQ(a.lengths_tokens, b.lengths_tokens);  // one seed, one order
    for (int64_t l : a.lengths_tokens) EXPECT_LE(l, 512);
    EXPECT_EQ(b.width_tokens, (a.width_tokens + 99) / 100 * 100);
    EXPECT_EQ(c.width_tokens, 512);
  }
  EXPECT_EQ(longest.max_width_tokens(), 512);
  EXPECT_EQ(multiple.max_width_tokens(), model::padded_length_tokens(model::Padding::multiple_of(100), 512, 512));
}

TEST(LengthSamplerTest, AMicroBatchLargerThanTheDataRepeatsAcrossPasses) {
  LengthSampler s(model::LengthDistribution::from_bins({{10, 1}, {20, 1}}), model::Padding{}, 0);
  const SampledMicroBatch mb = s.next(5);
  EXPECT_EQ(mb.lengths_tokens.size(), 5u);
  EXPECT_EQ(std::count(mb.lengths_tokens.begin(), mb.lengths_tokens.end(), 10) +
                std::count(mb.lengths_tokens.begin(), mb.lengths_tokens.end(), 20),
            5);
  EXPECT_EQ(mb.width_tokens, 20);
}

TEST(LengthSamplerTest, RefusesCollationsThatAreNotPaddingAndAnEmptyMicroBatch) {
  EXPECT_THROW(LengthSampler(data(), model::Padding{model::PaddingMode::packed, 0}, 0), InputError);
  EXPECT_THROW(LengthSampler(data(), model::Padding{model::PaddingMode::padding_free, 0}, 0), InputError);
  EXPECT_THROW(LengthSampler(data(), model::Padding{model::PaddingMode::multiple, 0}, 0), InputError);
  LengthSampler s(data(), model::Padding{}, 0);
  EXPECT_THROW(s.next(0), InputError);
  EXPECT_THROW(LengthSampler(model::LengthDistribution::from_bins({{8, kMaxSampledSequences + 1}}), model::Padding{}, 0),
               InputError);
}

}  // namespace
}  // namespace lorasim::calib
