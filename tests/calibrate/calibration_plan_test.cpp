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

TEST(CalibrationPlan, CudaPlanProbesAWiderWidthAtTheSplitDepths) {
  const auto plan = default_plan(reference("qwen3-1.7b"), /*is_cuda=*/true);
  std::set<int64_t> wide_depths;
  std::set<int64_t> wide_seqs;
  size_t wide = 0;
  for (const PlannedRun& p : plan) {
    if (p.model != "qwen3-8b") continue;
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
  // Labels name the probe, so progress lines and residuals tell the models apart.
  for (const PlannedRun& p : plan) {
    if (p.model.empty()) continue;
    EXPECT_EQ(p.label().rfind(p.model + " L=", 0), 0u) << p.label();
  }
}

TEST(CalibrationPlan, CudaPlanProbesANarrowerWidthBeforeTheWiderOne) {
  const auto plan = default_plan(reference("qwen3-1.7b"), /*is_cuda=*/true);
  size_t narrow = 0, last_narrow = 0, first_wide = plan.size();
  std::set<int64_t> depths;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].model == "qwen2.5-0.5b") {
      ++narrow;
      last_narrow = i;
      depths.insert(plan[i].depth);
      EXPECT_TRUE(plan[i].split) << plan[i].label();
    }
    if (plan[i].model == "qwen3-8b") first_wide = std::min(first_wide, i);
  }
  EXPECT_EQ(narrow, 18u);  // like the wide probe
  EXPECT_EQ(depths, (std::set<int64_t>{1, 3}));
  EXPECT_LT(last_narrow, first_wide);  // the cheaper probe first, should the budget end
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
  for (const PlannedRun& p : default_plan(opt, true)) EXPECT_NE(p.model, "qwen3-8b") << p.label();
  opt.wide_model = "llama-3.1-8b";
  EXPECT_EQ(wide_model_name(opt, true), "llama-3.1-8b");
  opt.wide_model = "qwen3-1.7b";  // the reference itself adds nothing
  EXPECT_EQ(wide_model_name(opt, true), "");
  opt.wide_model = "qwen3-9b";
  EXPECT_THROW(wide_model_name(opt, true), InputError);
  opt.narrow_model = "none";
  EXPECT_EQ(narrow_model_name(opt, true), "");
  opt.narrow_model = "llama-3.2-1b";
  EXPECT_EQ(narrow_model_name(opt, true), "llama-3.2-1b");
  opt.narrow_model = "qwen2.5-05b";
  try {
    narrow_model_name(opt, true);
    ADD_FAILURE() << "an unknown narrow probe must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("for the narrow probe"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("qwen2.5-0.5b"), std::string::npos) << e.what();
  }
}

TEST(CalibrationPlan, CpuPlanHasNoProbeByDefault) {
  EXPECT_EQ(wide_model_name(reference("tiny"), false), "");
  EXPECT_EQ(narrow_model_name(reference("tiny"), false), "");
  for (const PlannedRun& p : default_plan(reference("tiny"), false)) EXPECT_TRUE(p.model.empty());
}

TEST(CalibrationPlan, DepthBeyondTheModelIsRefusedNamingItsLayerCount) {
  CalibrationOptions opt = reference("tiny");  // 2 layers
  opt.depths = {1, 99};
  try {
    default_plan(opt, false);
    FAIL() << "depth 99 of a 2-layer model was accepted";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("99"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 layers"), std::string::npos) << msg;
  }
  opt.depths = {2};
  EXPECT_FALSE(default_plan(opt, false).empty());
}

// Saved, such a plan's rows were two rows of one split, which a measurement file refuses.
TEST(CalibrationPlan, NoSplitIsPlannedTwice) {
  CalibrationOptions opt = reference("tiny");
  opt.seq_lens = {128, 128, 32};
  opt.max_tokens = 128;  // checkpointing's two micro-batches were then both 1
  for (bool cuda : {false, true}) {
    std::set<std::string> labels;
    for (const PlannedRun& p : default_plan(opt, cuda)) EXPECT_TRUE(labels.insert(p.label()).second) << p.label();
  }
}

}  // namespace
}  // namespace lorasim::calib
