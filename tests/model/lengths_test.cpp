// The length distribution: exact values on small hand-worked histograms, the expected longest
// against seeded sampling, the worst micro-batch, the padding modes and the file's errors.
#include "model/lengths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "model/error.h"

using namespace lorasim::model;
using lorasim::ConfigError;
using lorasim::InputError;

namespace {

// Four sequences: 100, 200, 200 and 400 tokens. F = 1/4, 3/4, 1.
LengthDistribution four() { return LengthDistribution::from_bins({{200, 2}, {400, 1}, {100, 1}}); }

LengthDistribution parse(const std::string& text) {
  std::istringstream in(text);
  return parse_lengths(in, "data.txt");
}

// The ConfigError that parsing `text` throws.
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::pair<int64_t, int64_t>> pairs(const LengthDistribution& d) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const LengthBin& b : d.bins()) out.emplace_back(b.length_tokens, b.count);
  return out;
}

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

}  // namespace

TEST(LengthsTest, BinsAreSortedMergedAndSummed) {
  const LengthDistribution d = LengthDistribution::from_bins({{200, 1}, {100, 1}, {200, 1}, {300, 0}, {400, 1}});
  EXPECT_EQ(pairs(d), (Pairs{{100, 1}, {200, 2}, {400, 1}}));
  EXPECT_EQ(d.sequences(), 4);
  EXPECT_EQ(d.total_tokens(), 900);
  EXPECT_EQ(d.mean_tokens(), 225.0);
  EXPECT_EQ(d.shortest_tokens(), 100);
  EXPECT_EQ(d.longest_tokens(), 400);
  EXPECT_EQ(d.max_length_tokens(), 400);
  EXPECT_FALSE(d.one_point());
  EXPECT_EQ(d.cdf(99), 0.0);
  EXPECT_EQ(d.cdf(100), 0.25);
  EXPECT_EQ(d.cdf(399), 0.75);
  EXPECT_EQ(d.cdf(400), 1.0);
}

TEST(LengthsTest, BadBinsAreAnInputError) {
  EXPECT_THROW(LengthDistribution::from_bins({}), InputError);
  EXPECT_THROW(LengthDistribution::from_bins({{100, 0}}), InputError);
  EXPECT_THROW(LengthDistribution::from_bins({{0, 1}}), InputError);
  EXPECT_THROW(LengthDistribution::from_bins({{-5, 1}}), InputError);
  EXPECT_THROW(LengthDistribution::from_bins({{100, -1}}), InputError);
  EXPECT_THROW(LengthDistribution::from_bins({{1, INT64_MAX}, {2, 1}}), InputError);  // sequences
  EXPECT_THROW(LengthDistribution::from_bins({{int64_t{1} << 62, 2}}), InputError);    // tokens
  EXPECT_THROW(LengthDistribution::fixed(0), InputError);
}

TEST(LengthsTest, LongestOfTwoOnAHandWorkedHistogram) {
  // P(longest <= l) = F(l)^2: 1/16, 9/16, 1. So P = 1/16, 8/16, 7/16 and
  // E = (100 + 8 x 200 + 7 x 400) / 16 = 4500 / 16.
  const std::vector<LengthProbability> p = longest_of(four(), 2);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].length_tokens, 100);
  EXPECT_EQ(p[0].probability, 1.0 / 16);
  EXPECT_EQ(p[1].probability, 8.0 / 16);
  EXPECT_EQ(p[2].probability, 7.0 / 16);
  EXPECT_EQ(expected_longest_tokens(four(), 2), 281.25);
  // b = 1 is the mean; b = 3: F^3 = 1/64, 27/64, 1, E = (100 + 26 x 200 + 37 x 400) / 64.
  EXPECT_EQ(expected_longest_tokens(four(), 1), 225.0);
  EXPECT_EQ(expected_longest_tokens(four(), 3), 20100.0 / 64);
  // Two equally likely lengths 1 and 2: E[max of 2] = 1 x 1/4 + 2 x 3/4.
  EXPECT_EQ(expected_longest_tokens(LengthDistribution::from_bins({{1, 1}, {2, 1}}), 2), 1.75);
}

TEST(LengthsTest, QuantileOfTheLongestIsTheFirstLengthWhereFToTheBReachesIt) {
  // b = 2: F^2 = 0.0625, 0.5625, 1.
  EXPECT_EQ(longest_quantile_tokens(four(), 2, 0.0625), 100);
  EXPECT_EQ(longest_quantile_tokens(four(), 2, 0.5), 200);
  EXPECT_EQ(longest_quantile_tokens(four(), 2, 0.5625), 200);
  EXPECT_EQ(longest_quantile_tokens(four(), 2, 0.6), 400);
  EXPECT_EQ(longest_quantile_tokens(four(), 2, 0.99), 400);
  EXPECT_EQ(longest_quantile_tokens(four(), 1, 0.75), 200);  // b = 1: the data's own quantile
  EXPECT_EQ(longest_quantile_tokens(four(), 1, 1.0), 400);
  EXPECT_THROW(longest_quantile_tokens(four(), 2, 0.0), InputError);
  EXPECT_THROW(longest_quantile_tokens(four(), 2, 1.5), InputError);
  EXPECT_THROW(longest_quantile_tokens(four(), 2, std::nan("")), InputError);
  EXPECT_THROW(longest_quantile_tokens(four(), 0, 0.5), InputError);
  EXPECT_THROW(expected_longest_tokens(four(), 0), InputError);
}

TEST(LengthsTest, ExpectedLongestAndP99MatchSeededSampling) {
  // A long-tailed histogram: counts of a discretized log-normal (median 256, sigma 0.9),
  // truncated at 1024, the shape issue 16 measured.
  std::vector<LengthBin> bins;
  for (int64_t l = 8; l <= 4096; l += 8) {
    const double z = (std::log(static_cast<double>(l)) - std::log(256.0)) / 0.9;
    bins.push_back({l, static_cast<int64_t>(std::llround(10000 * std::exp(-z * z / 2) / static_cast<double>(l))) + 1});
  }
  const LengthDistribution d = LengthDistribution::from_bins(bins).truncated(1024);
  std::vector<int64_t> cumulative;
  for (size_t i = 0; i < d.bins().size(); ++i) cumulative.push_back(d.cumulative_count(i));
  std::mt19937_64 rng(20261201);
  std::uniform_int_distribution<int64_t> pick(0, d.sequences() - 1);
  auto draw = [&] {
    const size_t i = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), pick(rng)) -
                                         cumulative.begin());
    return d.bins()[i].length_tokens;
  };
  for (int64_t b : {1, 2, 4, 16, 32}) {
    const int trials = 100000;
    std::vector<int64_t> longest(trials);
    double sum = 0;
    for (int t = 0; t < trials; ++t) {
      int64_t m = 0;
      for (int64_t j = 0; j < b; ++j) m = std::max(m, draw());
      longest[t] = m;
      sum += static_cast<double>(m);
    }
    const double sampled = sum / trials, exact = expected_longest_tokens(d, b);
    EXPECT_NEAR(sampled, exact, 0.01 * exact) << "b = " << b;
    std::sort(longest.begin(), longest.end());
    const int64_t p99 = longest_quantile_tokens(d, b, 0.99);
    // The sampled p99 lies within the exact 98.5th and 99.5th percentiles.
    EXPECT_GE(longest[static_cast<size_t>(0.99 * trials)], longest_quantile_tokens(d, b, 0.985)) << "b = " << b;
    EXPECT_LE(longest[static_cast<size_t>(0.99 * trials)], longest_quantile_tokens(d, b, 0.995)) << "b = " << b;
    EXPECT_LE(p99, d.max_length_tokens());
    if (b > 1) {
      EXPECT_GT(exact, expected_longest_tokens(d, b / 2)) << "b = " << b;  // more rows, more padding
      EXPECT_GT(expected_micro_batch(d, Padding{}, b).padding_fraction(),
                expected_micro_batch(d, Padding{}, b / 2).padding_fraction());
    }
  }
}

TEST(LengthsTest, OnePointIsTheSequenceLengthExactly) {
  const LengthDistribution d = LengthDistribution::fixed(512);
  EXPECT_TRUE(d.one_point());
  EXPECT_EQ(d.mean_tokens(), 512.0);
  EXPECT_EQ(d.max_length_tokens(), 512);
  for (int64_t b : {1, 3, 64}) {
    EXPECT_EQ(expected_longest_tokens(d, b), 512.0);
    EXPECT_EQ(longest_quantile_tokens(d, b, 0.99), 512);
    for (const char* mode : {"longest", "multiple:64", "max_length", "packed", "padding-free"}) {
      for (bool grouped : {false, true}) {
        const MicroBatchTokens t = expected_micro_batch(d, parse_padding(mode), b, grouped);
        EXPECT_EQ(t.padded_tokens, 512.0 * b) << mode;
        EXPECT_EQ(t.real_tokens, 512.0 * b) << mode;
        EXPECT_EQ(t.padding_fraction(), 0.0) << mode;
      }
      const WorstMicroBatch w = worst_micro_batch(d, parse_padding(mode), b);
      EXPECT_EQ(w.padded_tokens, 512 * b) << mode;
      EXPECT_EQ(w.real_tokens, 512 * b) << mode;
      EXPECT_EQ(w.padded_length_tokens, 512) << mode;
    }
  }
  // A multiple that does not divide the length pads it: 512 -> 600.
  EXPECT_EQ(expected_micro_batch(d, Padding::multiple_of(100), 2).padded_tokens, 1200.0);
  EXPECT_EQ(rows_per_epoch(d, Padding{}), 1);
}

TEST(LengthsTest, PaddingModesOnAHandWorkedHistogram) {
  const LengthDistribution d = four();  // mean 225, max length 400
  const MicroBatchTokens longest = expected_micro_batch(d, Padding{}, 2);
  EXPECT_EQ(longest.padded_tokens, 562.5);  // 2 x 281.25
  EXPECT_EQ(longest.real_tokens, 450.0);
  EXPECT_DOUBLE_EQ(longest.padding_fraction(), 0.2);
  // pad_to_multiple_of 128: 100, 200, 400 -> 128, 256, 512; E = (128 + 8 x 256 + 7 x 512) / 16.
  EXPECT_EQ(expected_micro_batch(d, Padding::multiple_of(128), 2).padded_tokens, 2 * 360.0);
  const MicroBatchTokens max_length = expected_micro_batch(d, parse_padding("max_length"), 2);
  EXPECT_EQ(max_length.padded_tokens, 800.0);
  EXPECT_EQ(max_length.real_tokens, 450.0);
  EXPECT_EQ(expected_micro_batch(d, parse_padding("packed"), 2).padded_tokens, 800.0);
  EXPECT_EQ(expected_micro_batch(d, parse_padding("packed"), 2).padding_fraction(), 0.0);
  const MicroBatchTokens free = expected_micro_batch(d, parse_padding("padding-free"), 2);
  EXPECT_EQ(free.padded_tokens, 450.0);
  EXPECT_EQ(free.padding_fraction(), 0.0);
  // Truncated at 300 (and padded to it): 100, 200, 200, 300, mean 200.
  const MicroBatchTokens cut = expected_micro_batch(d.truncated(300), parse_padding("max_length"), 2);
  EXPECT_EQ(cut.padded_tokens, 600.0);
  EXPECT_EQ(cut.real_tokens, 400.0);
  EXPECT_THROW(expected_micro_batch(d, Padding{}, 0), InputError);
}

TEST(LengthsTest, WorstWidthReachIsOneLessTheChanceThatAllPadNarrower) {
  const LengthDistribution d = four();  // 100 x 1, 200 x 2, 400 x 1
  // Padded to the longest: narrower than 400 with chance (3/4)^b.
  EXPECT_DOUBLE_EQ(worst_width_reach(d, Padding{}, 1), 0.25);
  EXPECT_DOUBLE_EQ(worst_width_reach(d, Padding{}, 2), 7.0 / 16);
  // To multiples of 512 every length pads alike; of 256, 100 and 200 pad narrower than 400's 512.
  EXPECT_EQ(worst_width_reach(d, Padding::multiple_of(512), 3), 1.0);
  EXPECT_DOUBLE_EQ(worst_width_reach(d, Padding::multiple_of(256), 1), 0.25);
  // Truncated at 200: 3 of 4 have the worst width.
  EXPECT_DOUBLE_EQ(worst_width_reach(d.truncated(200), Padding{}, 1), 0.75);
  EXPECT_EQ(worst_width_reach(LengthDistribution::fixed(512), Padding{}, 4), 1.0);
  // Padding-free shapes are token counts, which the worst one's rarely repeats.
  EXPECT_EQ(worst_width_reach(d, parse_padding("padding-free"), 2), 0.0);
  EXPECT_THROW(worst_width_reach(d, Padding{}, 0), InputError);
}

TEST(LengthsTest, GroupByLengthPadsEachSortedGroupToItsLongest) {
  const LengthDistribution d = four();
  // b = 2: [100 200] [200 400]: (2 x 200 + 2 x 400) / 4 = 300 per sequence.
  EXPECT_EQ(expected_micro_batch(d, Padding{}, 2, true).padded_tokens, 600.0);
  // b = 3: [100 200 200] [400]: (3 x 200 + 400) / 4 = 250.
  EXPECT_EQ(expected_micro_batch(d, Padding{}, 3, true).padded_tokens, 750.0);
  // Multiples of 128: [100 200] -> 256, [200 400] -> 512: (512 + 1024) / 4 = 384.
  EXPECT_EQ(expected_micro_batch(d, Padding::multiple_of(128), 2, true).padded_tokens, 768.0);
  // Larger than the data: one group padded to 400.
  EXPECT_EQ(expected_micro_batch(d, Padding{}, 8, true).padded_tokens, 8 * 400.0);
  // Groups that fall on whole bins pad nothing, where random order pads to the longest of b.
  const LengthDistribution many = LengthDistribution::from_bins({{100, 100}, {200, 200}, {400, 100}});
  EXPECT_EQ(expected_micro_batch(many, Padding{}, 2, true).padding_fraction(), 0.0);
  EXPECT_EQ(expected_micro_batch(many, Padding{}, 2).padded_tokens, 562.5);
  // One pass over the bins, whatever they count: 2 x 10^12 sequences, b = 1 pads nothing.
  const LengthDistribution huge = LengthDistribution::from_bins({{100, 1'000'000'000'000}, {200, 1'000'000'000'000}});
  EXPECT_EQ(expected_micro_batch(huge, Padding{}, 1, true).padded_tokens, 150.0);
  EXPECT_EQ(expected_micro_batch(huge, Padding{}, 2, true).padding_fraction(), 0.0);
  // The modes without padding to the longest are unchanged.
  EXPECT_EQ(expected_micro_batch(d, parse_padding("max_length"), 2, true).padded_tokens, 800.0);
}

TEST(LengthsTest, WorstMicroBatchIsTheLongestSequencesTogether) {
  const LengthDistribution d = four();
  WorstMicroBatch w = worst_micro_batch(d, Padding{}, 2);  // 400 and 200
  EXPECT_EQ(w.longest_tokens, 400);
  EXPECT_EQ(w.padded_length_tokens, 400);
  EXPECT_EQ(w.padded_tokens, 800);
  EXPECT_EQ(w.real_tokens, 600);
  w = worst_micro_batch(d, Padding{}, 3);  // 400, 200, 200
  EXPECT_EQ(w.padded_tokens, 1200);
  EXPECT_EQ(w.real_tokens, 800);
  w = worst_micro_batch(d, Padding{}, 5);  // all four, then the longest again
  EXPECT_EQ(w.padded_tokens, 2000);
  EXPECT_EQ(w.real_tokens, 1300);
  w = worst_micro_batch(d, parse_padding("padding-free"), 2);
  EXPECT_EQ(w.padded_tokens, 600);
  EXPECT_EQ(w.real_tokens, 600);
  w = worst_micro_batch(d, Padding::multiple_of(128), 2);
  EXPECT_EQ(w.padded_length_tokens, 512);
  EXPECT_EQ(w.padded_tokens, 1024);
  w = worst_micro_batch(d, parse_padding("packed"), 2);
  EXPECT_EQ(w.padded_tokens, 800);
  EXPECT_EQ(w.real_tokens, 800);
  // After truncation at 300: 300 and 200; padding to max_length pads to the truncation.
  w = worst_micro_batch(d.truncated(300), Padding{}, 2);
  EXPECT_EQ(w.longest_tokens, 300);
  EXPECT_EQ(w.padded_tokens, 600);
  EXPECT_EQ(w.real_tokens, 500);
  EXPECT_EQ(worst_micro_batch(d.truncated(1000), parse_padding("max_length"), 2).padded_tokens, 2000);
  EXPECT_THROW(worst_micro_batch(d, Padding{}, 0), InputError);
  EXPECT_THROW(worst_micro_batch(LengthDistribution::fixed(int64_t{1} << 40), Padding{}, int64_t{1} << 30), InputError);
}

TEST(LengthsTest, TruncationCutsLongSequencesAndSetsTheMaximumLength) {
  const LengthDistribution cut = four().truncated(250);
  EXPECT_EQ(pairs(cut), (Pairs{{100, 1}, {200, 2}, {250, 1}}));
  EXPECT_EQ(cut.total_tokens(), 750);
  EXPECT_EQ(cut.max_length_tokens(), 250);
  EXPECT_EQ(pairs(four().truncated(200)), (Pairs{{100, 1}, {200, 3}}));
  const LengthDistribution loose = four().truncated(1000);
  EXPECT_EQ(pairs(loose), pairs(four()));
  EXPECT_EQ(loose.max_length_tokens(), 1000);
  EXPECT_EQ(pairs(four().truncated(50)), (Pairs{{50, 4}}));
  EXPECT_THROW(four().truncated(0), InputError);
}

TEST(LengthsTest, PackingMakesRowsOfTheMaximumLength) {
  EXPECT_EQ(rows_per_epoch(four(), Padding{}), 4);
  EXPECT_EQ(rows_per_epoch(four(), parse_padding("packed")), 3);               // 900 tokens / 400
  EXPECT_EQ(rows_per_epoch(four().truncated(300), parse_padding("packed")), 3);  // 800 / 300
  EXPECT_EQ(rows_per_epoch(LengthDistribution::from_bins({{100, 4}}).truncated(400), parse_padding("packed")), 1);
}

TEST(LengthsTest, PaddingNamesRoundTripAndBadOnesAreRefused) {
  for (const char* name : {"longest", "multiple:64", "max_length", "packed", "padding-free"})
    EXPECT_EQ(padding_name(parse_padding(name)), name);
  EXPECT_EQ(parse_padding("padding_free").mode, PaddingMode::padding_free);
  EXPECT_EQ(parse_padding("max-length").mode, PaddingMode::max_length);
  EXPECT_EQ(parse_padding("multiple:8"), Padding::multiple_of(8));
  for (const char* bad : {"", "multiple", "multiple:", "multiple:0", "multiple:-8", "multiple:8x", "multiple:1e3",
                          "multiple:99999999999999999999", "Longest", "pad"})
    EXPECT_THROW(parse_padding(bad), InputError) << bad;
  EXPECT_THROW(validate_padding({PaddingMode::multiple, 0}), InputError);
  EXPECT_THROW(padded_length_tokens({PaddingMode::multiple, 0}, 100, 100), InputError);
  EXPECT_THROW(padded_length_tokens(Padding::multiple_of(3), INT64_MAX, INT64_MAX), InputError);
}

TEST(LengthsTest, FileOfOneLengthPerLine) {
  EXPECT_EQ(pairs(parse("512\n128\n# a comment\n\n  512  # trailing comment\n")), (Pairs{{128, 1}, {512, 2}}));
  EXPECT_EQ(pairs(parse("length\n64\r\n64\r\n")), (Pairs{{64, 2}}));  // a header, CRLF
  EXPECT_EQ(pairs(parse("\xEF\xBB\xBF" "7\n")), (Pairs{{7, 1}}));       // a byte-order mark
  EXPECT_EQ(pairs(parse("7")), (Pairs{{7, 1}}));                        // no final newline
}

TEST(LengthsTest, FileOfAHistogram) {
  EXPECT_EQ(pairs(parse("# from a tokenizer\nlength,count\n128,3\n512,0\n64,2\n128,1\n")), (Pairs{{64, 2}, {128, 4}}));
  EXPECT_EQ(pairs(parse("Length , Count\n 10 , 5 \n")), (Pairs{{10, 5}}));
}

TEST(LengthsTest, FileErrorsNameTheLine) {
  EXPECT_NE(parse_error("128\nabc\n").find("data.txt:2: expected a whole number as the token length, got 'abc'"),
            std::string::npos);
  EXPECT_NE(parse_error("128\n12.5\n").find("data.txt:2:"), std::string::npos);
  EXPECT_NE(parse_error("1\n\n0\n").find("data.txt:3: a token length must be positive, got 0"), std::string::npos);
  EXPECT_NE(parse_error("-4\n").find("data.txt:1: a token length must be positive, got -4"), std::string::npos);
  EXPECT_NE(parse_error("99999999999999999999\n").find("data.txt:1: token length '99999999999999999999' is beyond"),
            std::string::npos);
  EXPECT_NE(parse_error("128\n1,2\n").find("data.txt:2: expected one token length per line"), std::string::npos);
  EXPECT_NE(parse_error("128,3\n").find("data.txt:1: a histogram needs the header 'length,count'"), std::string::npos);
  EXPECT_NE(parse_error("length,count\n128\n").find("data.txt:2: expected 'length,count'"), std::string::npos);
  EXPECT_NE(parse_error("length,count\n128,3,4\n").find("data.txt:2:"), std::string::npos);
  EXPECT_NE(parse_error("length,count\n128,-3\n").find("data.txt:2: a count must not be negative"), std::string::npos);
  EXPECT_NE(parse_error("length,count\n128,\n").find("data.txt:2: expected a whole number as the count"),
            std::string::npos);
  EXPECT_NE(parse_error("length,count\n4611686018427387904,1\n4611686018427387904,1\n").find("data.txt:3:"),
            std::string::npos);
  EXPECT_EQ(parse_error(""), "data.txt: holds no token lengths (expected one per line, or a 'length,count' histogram)");
  EXPECT_NE(parse_error("# only a comment\n\n").find("data.txt: holds no token lengths"), std::string::npos);
  EXPECT_NE(parse_error("length,count\n").find("data.txt: holds no token lengths"), std::string::npos);
  EXPECT_EQ(parse_error("length,count\n128,0\n"), "data.txt: holds no sequences (every count is 0)");
}

TEST(LengthsTest, ReadsAFileAndSaysWhyOneCannotBeRead) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lorasim_lengths_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "lengths.csv").string();
  std::ofstream(path) << "length,count\n256,10\n1024,2\n";
  const LengthDistribution d = read_lengths_file(path);
  EXPECT_EQ(pairs(d), (Pairs{{256, 10}, {1024, 2}}));
  std::ofstream(path) << "256\nx\n";
  try {
    read_lengths_file(path);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":2:", 0), 0u) << e.what();
  }
  const std::string missing = (dir / "missing.txt").string();
  try {
    read_lengths_file(missing);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  try {
    read_lengths_file(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}
