// The calibration plan: what it measures decides what the fit can separate.
#include <gtest/gtest.h>

#include <set>

#include "calibrate/calibration.h"
#include "model/architecture.h"
#include "model/error.h"


namespace lorasim::calib {
namespace {

CalibrationOptions reference(const std::string& name) {
  CalibrationOptions opt;
  opt.reference.arch = model::preset(name);
  return opt;
}

TEST(CalibrationPlan, CudaPlanProbesASecondWidthAtTheSplitDepths) {
  const auto plan = default_plan(reference("qwen3-1.7b"), /*is_cuda=*/true);
  std::set<int64_t> wide_depths;
  std::set<int64_t> wide_seqs;
  size_t wide = 0;
  for (const PlannedRun& p : plan) {
    if (p.model.empty()) continue;
    EXPECT_EQ(p.model, "qwen3-8b");
    EXPECT_TRUE(p.split) << p.label();  // the device fit needs the device time alone
    EXPECT_FALSE(p.grad_ckpt);
    EXPECT_LE(p.micro_batch * p.seq_len, 16384) << p.label();
    wide_depths.insert(p.depth);
    wide_seqs.insert(p.seq_len);
    ++wide;
  }
  EXPECT_EQ(wide_depths, (std::set<int64_t>{1, 3}));
  EXPECT_EQ(wide_seqs, (std::set<int64_t>{256, 1024, 4096}));
  EXPECT_EQ(wide, 18u);  // 2 depths x 3 sequence lengths x 3 micro-batches
  // Labels name the probe, so progress lines and residuals tell the two models apart.
  for (const PlannedRun& p : plan) {
    if (p.model.empty()) continue;
    EXPECT_EQ(p.label().rfind("qwen3-8b L=", 0), 0u) << p.label();
  }
}

TEST(CalibrationPlan, CheapRunsComeBeforeTheWideAndDeepGroups) {
  // A short budget skips the plan's tail: the checkpointing and rank runs must not be in it.
  const auto plan = default_plan(reference("qwen3-1.7b"), true);
  size_t last_cheap = 0, first_costly = plan.size();
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].grad_ckpt || plan[i].lora_rank) last_cheap = i;
    if (!plan[i].model.empty() || !plan[i].split) first_costly = std::min(first_costly, i);
  }
  EXPECT_LT(last_cheap, first_costly);
}

TEST(CalibrationPlan, WideProbeCanBeChosenOrTurnedOff) {
  CalibrationOptions opt = reference("qwen3-1.7b");
  opt.wide_model = "none";
  for (const PlannedRun& p : default_plan(opt, true)) EXPECT_TRUE(p.model.empty()) << p.label();
  opt.wide_model = "llama-3.1-8b";
  EXPECT_EQ(wide_model_name(opt, true), "llama-3.1-8b");
  opt.wide_model = "qwen3-1.7b";  // the reference itself adds nothing
  EXPECT_EQ(wide_model_name(opt, true), "");
  opt.wide_model = "qwen3-9b";
  EXPECT_THROW(wide_model_name(opt, true), InputError);
}

TEST(CalibrationPlan, CpuPlanHasNoWideProbeByDefault) {
  EXPECT_EQ(wide_model_name(reference("tiny"), false), "");
  for (const PlannedRun& p : default_plan(reference("tiny"), false)) EXPECT_TRUE(p.model.empty());
}

}  // namespace
}  // namespace lorasim::calib
