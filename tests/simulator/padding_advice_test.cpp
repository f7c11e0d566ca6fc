// The recommendation's padding advice: the next best split, and packing or grouping by length
// simulated with the recommended split where either makes an epoch faster.
#include "simulator/padding_advice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model/architecture.h"
#include "model/lengths.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {

sim::Request request(int64_t B, model::Padding p = {}) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.lengths = model::LengthDistribution::from_bins({{64, 500}, {256, 300}, {1024, 100}});
  r.workload.train.seq_len = 1024;
  r.workload.train.padding = p;
  r.hardware = test_gpu();
  r.effective_batch = B;
  return r;
}

const sim::PaddingAlternative* find(const sim::PaddingAdvice& a, const std::string& flag) {
  for (const auto& alt : a.faster)
    if (alt.flag == flag) return &alt;
  return nullptr;
}

}  // namespace

TEST(PaddingAdviceTest, TheNextBestIsTheSplitRankedSecond) {
  const sim::Request r = request(16);
  const sim::LengthsResult res = sim::simulate_lengths(r);
  const sim::PaddingAdvice a = sim::padding_advice(r, {}, res);
  ASSERT_TRUE(a.next_best.has_value());
  EXPECT_EQ(res.result.splits[*a.next_best].rank, 2);
}

TEST(PaddingAdviceTest, PackingAndGroupingAreTheSameSplitSimulatedThatWay) {
  const sim::Request r = request(16);
  const sim::LengthsResult res = sim::simulate_lengths(r);
  ASSERT_TRUE(res.result.recommended);
  const size_t best = *res.result.recommended;
  const sim::PaddingAdvice a = sim::padding_advice(r, {}, res);

  sim::Request packed = r;
  packed.workload.train.padding = model::parse_padding("packed");
  const sim::LengthsResult p = sim::simulate_lengths(packed);
  sim::LengthsOptions grouped;
  grouped.group_by_length = true;
  const sim::LengthsResult g = sim::simulate_lengths(r, grouped);
  // Each alternative is reported exactly when it saves at least 1% of the epoch.
  for (const auto& [flag, alt_res] : {std::pair<std::string, const sim::LengthsResult*>{"--padding packed", &p},
                                      {"--group-by-length", &g}}) {
    SCOPED_TRACE(flag);
    const double epoch = alt_res->lengths[best].epoch_time_s;
    const double saving = 1 - epoch / res.lengths[best].epoch_time_s;
    const sim::PaddingAlternative* alt = find(a, flag);
    EXPECT_EQ(alt != nullptr, saving >= 0.01) << saving;
    if (alt != nullptr) {
      EXPECT_EQ(alt->epoch_time_s, epoch);
      EXPECT_DOUBLE_EQ(alt->saving, saving);
      EXPECT_EQ(alt->fits, alt_res->result.splits[best].fits);
      EXPECT_EQ(alt->padding_fraction, alt_res->lengths[best].padding_fraction);
    }
  }
  // This data pads a lot: packing removes it all.
  const sim::PaddingAlternative* pack = find(a, "--padding packed");
  ASSERT_NE(pack, nullptr);
  EXPECT_EQ(pack->padding_fraction, 0);
  EXPECT_EQ(a.notes.size(), a.faster.size());
  EXPECT_NE(a.notes[0].find("packing=True"), std::string::npos) << a.notes[0];
}

TEST(PaddingAdviceTest, WhatTheDataAlreadyDoesIsNotAdvised) {
  sim::LengthsOptions grouped;
  grouped.group_by_length = true;
  for (const char* padding : {"packed", "padding-free"}) {
    const sim::Request r = request(16, model::parse_padding(padding));
    EXPECT_TRUE(sim::padding_advice(r, grouped, sim::simulate_lengths(r, grouped)).faster.empty()) << padding;
  }
  const sim::Request r = request(16);
  const sim::PaddingAdvice a = sim::padding_advice(r, grouped, sim::simulate_lengths(r, grouped));
  EXPECT_EQ(find(a, "--group-by-length"), nullptr);
}

TEST(PaddingAdviceTest, NothingRecommendedGivesNoAdvice) {
  sim::Request r = request(16);
  r.memory_limit_bytes = int64_t{1} << 30;
  const sim::PaddingAdvice a = sim::padding_advice(r, {}, sim::simulate_lengths(r));
  EXPECT_FALSE(a.next_best.has_value());
  EXPECT_TRUE(a.faster.empty());
}
