// The marks on model::Features (kPerMicroBatch, kPerWorkload) against what each stack's features
// do: CostModel scales the first from micro-batch 1 and keeps the rest, so a wrong mark would
// mispredict every split but the first.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <vector>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/training_stack.h"
#include "tests/model/test_hardware.h"

using namespace lorasim::model;

namespace {

std::vector<Workload> workloads() {
  std::vector<Workload> all;
  for (StackKind s : {StackKind::lorasim, StackKind::hf_peft})
    for (bool ckpt : {false, true}) {
      Workload w;
      w.arch = preset("qwen3-1.7b");
      w.train.seq_len = 384;
      w.train.grad_ckpt = ckpt;
      w.stack = training_stack(s).default_spec();
      all.push_back(w);
      if (s != StackKind::hf_peft) continue;
      w.stack.fused_lm_head = true;  // a loss tile: its size is per workload
      all.push_back(w);
      w.train.weight_format = WeightFormat::nf4;  // dequantization and quantized calls per workload
      w.train.kbit_prepare = true;
      w.train.grad_ckpt = true;
      all.push_back(w);
    }
  return all;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)); }

}  // namespace

TEST(FeatureMarksTest, MarkedFeaturesScaleWithTheMicroBatchAndTheRestStay) {
  for (const Workload& w : workloads()) {
    const TrainingStack& stack = training_stack(w.stack.kind);
    const Features one = stack.features(w, 1);
    for (int64_t b : {3, 8}) {
      const Features f = stack.features(w, b);
      for (size_t i = 0; i < std::size(kPerMicroBatch); ++i)
        EXPECT_TRUE(near(f.*kPerMicroBatch[i], static_cast<double>(b) * (one.*kPerMicroBatch[i])))
            << stack.name() << " feature " << i << " per micro-batch at b=" << b << ": " << f.*kPerMicroBatch[i]
            << " vs " << one.*kPerMicroBatch[i] << " at b=1";
      for (size_t i = 0; i < std::size(kPerWorkload); ++i)
        EXPECT_TRUE(near(f.*kPerWorkload[i], one.*kPerWorkload[i]))
            << stack.name() << " feature " << i << " per workload at b=" << b << ": " << f.*kPerWorkload[i] << " vs "
            << one.*kPerWorkload[i] << " at b=1";
    }
  }
}

TEST(FeatureMarksTest, TheCostModelOfOneEvaluationIsTheFeaturesOfEach) {
  const HardwareModel hw = lorasim::testing::test_gpu();
  for (const Workload& w : workloads()) {
    const CostModel cm(w, hw);
    for (int64_t b : {1, 5, 16}) {
      const Features f = features(w, b);  // evaluated at b, the loss tile included
      const MemoryEstimate direct = peak_memory(f, cm.model());
      EXPECT_TRUE(near(cm.memory(b).worst_reserved_bytes, direct.worst_reserved_bytes)) << b;
      EXPECT_TRUE(near(cm.micro_batch(b).total_s, micro_batch_time(f, cm.model(), w.train.precision).total_s)) << b;
    }
  }
}
