// The recommendation's padding advice: the next best split, and packing or grouping by length
// simulated with the recommended split where either makes an epoch faster.
#include "simulator/padding_advice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/lengths.h"
#include "simulator/note_text.h"
#include "simulator/simulate.h"
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

/// The pipeline's run of `r` with its padding advice.
sim::LengthsResult advised(const sim::Request& r, const sim::LengthsOptions& o = {}) {
  sim::Plan plan;
  plan.lengths = o;
  plan.advice = true;
  return sim::run(r, plan);
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
  const sim::PaddingAdvice a = advised(r).advice;
  ASSERT_TRUE(a.next_best.has_value());
  EXPECT_EQ(res.result.splits[*a.next_best].rank, 2);
}

TEST(PaddingAdviceTest, PackingAndGroupingAreTheSameSplitSimulatedThatWay) {
  const sim::Request r = request(16);
  const sim::LengthsResult res = sim::simulate_lengths(r);
  ASSERT_TRUE(res.result.recommended);
  const size_t best = *res.result.recommended;
  const sim::PaddingAdvice a = advised(r).advice;

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
  const std::vector<std::string> notes = sim::advice_texts(advised(r));
  EXPECT_EQ(notes.size(), a.faster.size());
  EXPECT_NE(notes[0].find("packing=True"), std::string::npos) << notes[0];
}

TEST(PaddingAdviceTest, WhatTheDataAlreadyDoesIsNotAdvised) {
  sim::LengthsOptions grouped;
  grouped.group_by_length = true;
  for (const char* padding : {"packed", "padding-free"}) {
    const sim::Request r = request(16, model::parse_padding(padding));
    EXPECT_TRUE(advised(r, grouped).advice.faster.empty()) << padding;
  }
  const sim::Request r = request(16);
  const sim::PaddingAdvice a = advised(r, grouped).advice;
  EXPECT_EQ(find(a, "--group-by-length"), nullptr);
}

TEST(PaddingAdviceTest, NothingRecommendedGivesNoAdvice) {
  sim::Request r = request(16);
  r.memory_limit_bytes = int64_t{1} << 30;
  const sim::PaddingAdvice a = advised(r).advice;
  EXPECT_FALSE(a.next_best.has_value());
  EXPECT_TRUE(a.faster.empty());
}

namespace {

// The usable memory midway between the two allocators' worst case of the split of the fastest
// epoch: the default allocator's fragmentation bound refuses it, expandable segments let it fit.
sim::Request refused_by_default_bound(int64_t& refused_b) {
  sim::Request r = request(16);
  r.workload.stack = model::StackSpec{};  // hf-peft, its default allocator
  r.workload.train.grad_ckpt = false;
  // The h200 profile's shares: the default allocator's bound far above expandable segments'.
  r.hardware.value("varying_bound_default", model::StackKind::hf_peft) = 1.51;
  r.hardware.value("varying_bound_expandable", model::StackKind::hf_peft) = 0.1;
  // Without a measured need at the memory limit, the bound decides whether a split fits.
  r.hardware.value("varying_need_default", model::StackKind::hf_peft) = 0;
  sim::Request e = r;
  e.workload.stack.allocator = model::AllocatorMode::expandable;
  const sim::LengthsResult d = sim::simulate_lengths(r), x = sim::simulate_lengths(e);
  size_t f = 0;
  for (size_t i = 0; i < d.result.splits.size(); ++i)
    if (d.lengths[i].epoch_time_s < d.lengths[f].epoch_time_s) f = i;
  refused_b = d.result.splits[f].micro_batch;
  const double mid = (d.result.splits[f].worst_reserved_bytes + x.result.splits[f].worst_reserved_bytes) / 2;
  const double context = d.result.memory_limit_bytes * (1 - r.safety_margin) - d.result.usable_memory_bytes;
  r.memory_limit_bytes = static_cast<int64_t>((mid + context) / (1 - r.safety_margin));
  return r;
}

}  // namespace

TEST(PaddingAdviceTest, NamesTheSplitExpandableSegmentsWouldLetFit) {
  int64_t b = 0;
  const sim::Request r = refused_by_default_bound(b);
  ASSERT_GT(b, 1);
  const sim::LengthsResult res = sim::simulate_lengths(r);
  ASSERT_TRUE(res.result.recommended);
  EXPECT_LT(res.result.splits[*res.result.recommended].micro_batch, b);  // the bound refuses it
  const sim::PaddingAdvice a = advised(r).advice;
  const sim::PaddingAlternative* alt = find(a, "--allocator expandable");
  ASSERT_NE(alt, nullptr);
  EXPECT_EQ(alt->micro_batch, b);
  EXPECT_EQ(alt->accumulation, 16 / b);
  EXPECT_EQ(alt->env, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  EXPECT_TRUE(alt->fits);
  EXPECT_GT(alt->saving, 0.01);
  int notes = 0;
  for (const std::string& n : sim::advice_texts(advised(r)))
    if (n.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") != std::string::npos) ++notes;
  EXPECT_EQ(notes, 1);
}

TEST(PaddingAdviceTest, NoAllocatorNoteWhereTheBoundRefusesNothingFaster) {
  sim::Request r = request(16);
  r.workload.stack = model::StackSpec{};
  r.memory_limit_bytes = int64_t{1} << 40;  // every split fits
  const sim::LengthsResult res = sim::simulate_lengths(r);
  EXPECT_EQ(find(advised(r).advice, "--allocator expandable"), nullptr);
  r.workload.stack.allocator = model::AllocatorMode::expandable;
  EXPECT_EQ(find(advised(r).advice, "--allocator expandable"), nullptr);
}
