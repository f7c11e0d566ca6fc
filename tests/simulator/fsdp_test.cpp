// FSDP FULL_SHARD: the per-GPU memory of qwen3-1.7b worked by hand, the collectives' exposure
// at the two ends (no compute to hide behind, compute hiding all), the refusals, and recommend's
// note that --fsdp fits where nothing replicated does.
#include "simulator/fsdp.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/error.h"
#include "simulator/data_parallel.h"
#include "simulator/note_text.h"
#include "simulator/simulate.h"
#include "tests/model/test_hardware.h"

using namespace lorasim;
using lorasim::testing::test_gpu;

namespace {
sim::Request request(int64_t B, int64_t gpus, bool fsdp) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.lora.rank = 16;
  r.workload.train.seq_len = 512;
  r.hardware = test_gpu();
  r.effective_batch = B;
  r.gpus = gpus;
  r.fsdp = fsdp;
  return r;
}

// The memory limit under which `res`'s request has `usable_bytes` usable: the limit less the
// request's safety margin and the CUDA context `res` reports.
int64_t limit_for_usable(const sim::Request& r, const sim::Result& res, double usable_bytes) {
  const double keep = 1 - r.safety_margin;
  const double context_bytes = res.memory_limit_bytes * keep - res.usable_memory_bytes;
  return static_cast<int64_t>((usable_bytes + context_bytes) / keep);
}

model::Interconnect link(double gbps, double latency_s) {
  model::Interconnect ic;
  ic.link = model::Link::nvlink;
  ic.allreduce_gbps = gbps;
  ic.allreduce_latency_s = latency_s;
  return ic;
}
}  // namespace

// qwen3-1.7b: a layer holds q 2048x2048, k and v 2048x1024, o 2048x2048, gate and up 2048x6144,
// down 6144x2048 and norms of 2048 + 2048 + 128 + 128: 50,336,000 parameters. Embedding (tied)
// 151936 x 2048 = 311,164,928 and the final norm 2048: 28 layers give 1,720,574,976 frozen.
// r=16 on all seven: 622,592 adapter parameters per layer, 17,432,576 in all.
TEST(FsdpTest, Qwen3MemoryOnTwoGpusIsWorkedByHand) {
  const model::Workload w = request(16, 2, true).workload;
  const model::ParamCounts p = model::count_params(w.arch, w.lora);
  ASSERT_EQ(p.per_layer, 50336000);
  ASSERT_EQ(p.base, 1720574976);
  ASSERT_EQ(p.lora_per_layer, 622592);
  const sim::FsdpMemory m = sim::fsdp_memory(w, 2);
  EXPECT_EQ(m.sharded_weights_bytes, 1720574976.0);  // 2 bytes each in bf16, halved
  EXPECT_EQ(m.root_unit_bytes, 622333952.0);         // (311,164,928 + 2048) x 2
  // Two layers gathered: 2 x (50,336,000 x 2 + 622,592 x 4 fp32 adapter bytes).
  EXPECT_EQ(m.layers_in_flight_bytes, 206324736.0);
  // Adapters, their gradients and AdamW's two moments, fp32: 16 bytes per parameter, halved.
  EXPECT_EQ(m.adapter_state_bytes, 139460608.0);
  // Against one GPU's 3,441,149,952 weight bytes and 278,921,216 of adapter state.
  EXPECT_EQ(m.delta_bytes, 1720574976.0 + 622333952.0 + 206324736.0 + 139460608.0 - 3441149952.0 - 278921216.0);
  EXPECT_EQ(m.delta_bytes, -1031376896.0);
  // Four GPUs: a quarter of each sharded term; the gathered ones stay whole.
  const sim::FsdpMemory four = sim::fsdp_memory(w, 4);
  EXPECT_EQ(four.sharded_weights_bytes, 860287488.0);
  EXPECT_EQ(four.adapter_state_bytes, 69730304.0);
  EXPECT_EQ(four.root_unit_bytes, m.root_unit_bytes);
}

TEST(FsdpTest, EverySplitHoldsOneGpusMemoryPlusTheDelta) {
  const sim::Result f = sim::simulate(request(16, 2, true));
  const sim::Result one = sim::simulate(request(8, 1, false));
  ASSERT_EQ(f.splits.size(), one.splits.size());
  for (size_t i = 0; i < f.splits.size(); ++i) {
    EXPECT_EQ(f.splits[i].peak_allocated_bytes, one.splits[i].peak_allocated_bytes - 1031376896.0);
    EXPECT_EQ(f.splits[i].worst_reserved_bytes, one.splits[i].worst_reserved_bytes - 1031376896.0);
    EXPECT_EQ(f.splits[i].step_time_s, one.splits[i].step_time_s + f.splits[i].fsdp_exposed_s);
    EXPECT_EQ(f.splits[i].allreduce_exposed_s, 0);  // no DDP all-reduce: reduce-scatter instead
  }
}

// 100 GB/s, 10 us per ring step, 2 GPUs: a gather of B bytes is 10 us + B / 2 / 1e11 s.
TEST(FsdpTest, CollectivesAreExposedWholeWithoutComputeAndOnePerPassWithIt) {
  const model::Workload w = request(16, 2, true).workload;
  const model::Interconnect ic = link(100, 1e-5);
  const double layer_s = 1e-5 + 103162368.0 / 2 / 1e11;                 // 525.8 us
  const double root_s = 1e-5 + 622333952.0 / 2 / 1e11;                  // 3.12 ms
  const double rs_layer_s = 1e-5 + 17432576.0 * 4 / 28 / 2 / 1e11;      // one layer's fp32 gradients
  const double comm = root_s + 28 * layer_s + 28 * layer_s + 28 * rs_layer_s;
  const sim::FsdpMicroBatch none = sim::fsdp_micro_batch(w, 2, ic, 0, true);
  EXPECT_NEAR(none.comm_s, comm, 1e-15);
  // Nothing to hide behind: everything, plus the first layer of each pass and the last reduce-scatter counted again.
  EXPECT_NEAR(none.exposed_s, comm + 2 * layer_s + rs_layer_s, 1e-15);
  // Compute far longer than the gathers: the root unit, one layer per pass and the last reduce-scatter.
  const sim::FsdpMicroBatch hidden = sim::fsdp_micro_batch(w, 2, ic, 10.0, true);
  EXPECT_NEAR(hidden.exposed_s, root_s + 2 * layer_s + rs_layer_s, 1e-15);
  // An accumulating micro-batch reduce-scatters nothing.
  EXPECT_NEAR(sim::fsdp_micro_batch(w, 2, ic, 10.0, false).exposed_s, root_s + 2 * layer_s, 1e-15);
  // Under gradient checkpointing the recompute gathers every layer once more.
  model::Workload ckpt = w;
  ckpt.train.grad_ckpt = true;
  EXPECT_NEAR(sim::fsdp_micro_batch(ckpt, 2, ic, 0, false).comm_s, root_s + 3 * 28 * layer_s, 1e-15);
  // A step of four: the first, two alike and the last, which alone reduce-scatters.
  const sim::FsdpMicroBatch step = sim::fsdp_step(w, 2, ic, 0.2, 0.1, 4);
  EXPECT_NEAR(step.exposed_s,
              sim::fsdp_micro_batch(w, 2, ic, 0.2, false).exposed_s + 2 * sim::fsdp_micro_batch(w, 2, ic, 0.1, false).exposed_s +
                  sim::fsdp_micro_batch(w, 2, ic, 0.1, true).exposed_s,
              1e-15);
}

TEST(FsdpTest, OneGpuAndAQuantizedBaseAreRefused) {
  EXPECT_THROW(sim::simulate(request(16, 1, true)), InputError);
  sim::Request q = request(16, 2, true);
  q.workload.train.weight_format = model::WeightFormat::nf4;
  q.workload.train.grad_ckpt = true;
  try {
    sim::simulate(q);
    ADD_FAILURE() << "a quantized base under FSDP was predicted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not modelled yet"), std::string::npos) << e.what();
    EXPECT_EQ(e.quantity(), "fsdp");
  }
}

// A limit between the replicated 1x1's worst case and FSDP's: nothing fits replicated, and the
// result says that --fsdp would.
TEST(FsdpTest, NothingFittingReplicatedSaysFsdpWould) {
  const sim::Result rep = sim::simulate(request(2, 2, false));
  const sim::Result sharded = sim::simulate(request(2, 2, true));
  const double usable = (rep.splits[0].worst_reserved_bytes + sharded.splits[0].worst_reserved_bytes) / 2;
  sim::Request r = request(2, 2, false);
  r.memory_limit_bytes = limit_for_usable(r, rep, usable);
  const sim::Result out = sim::simulate(r);
  EXPECT_FALSE(out.recommended);
  bool said = false;
  for (const std::string& n : sim::note_texts(r, out)) said = said || n.find("with --fsdp") != std::string::npos;
  EXPECT_TRUE(said);
  r.fsdp = true;
  EXPECT_TRUE(sim::simulate(r).recommended);
}

// DDP's copy of the gradients counts in whether a split fits, not only in its reported peak.
TEST(FsdpTest, DdpBucketsCountInFits) {
  const sim::Result rep = sim::simulate(request(2, 2, false));
  // Between the worst case without the buckets and with them.
  const double usable = rep.splits[0].worst_reserved_bytes - rep.data_parallel.bucket_memory_bytes / 2;
  sim::Request r = request(2, 2, false);
  r.memory_limit_bytes = limit_for_usable(r, rep, usable);
  const sim::Result out = sim::simulate(r);
  EXPECT_FALSE(out.splits[0].fits);
  // Without the buckets it would have fitted: the limit is where the test means it to be.
  EXPECT_LT(out.splits[0].worst_reserved_bytes - out.data_parallel.bucket_memory_bytes, out.usable_memory_bytes);
}
