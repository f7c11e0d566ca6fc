// The hf-peft calibration plan (calibrate/hf_plan.h): which runs it holds, and the JSON the probe
// reads (/work/notes' contract: python/lorasim_hf/probe.py's plan format).
#include "calibrate/hf_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "hwprofiles/builtin.h"
#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/hf_config.h"

namespace lorasim::calib {
namespace {

using nlohmann::json;

model::Workload reference(const std::string& name) {
  model::Workload w;
  w.arch = model::preset(name);
  w.train.seq_len = 512;
  w.stack.kind = model::StackKind::hf_peft;
  return w;
}

std::vector<HfPlannedRun> cuda_plan(const std::string& name = "qwen3-1.7b") {
  HfPlanOptions opt;
  opt.is_cuda = true;
  opt.reference = reference(name);
  return default_hf_plan(opt);
}

template <typename Pred>
size_t count_runs(const std::vector<HfPlannedRun>& plan, Pred pred) {
  return static_cast<size_t>(std::count_if(plan.begin(), plan.end(), [&](const HfPlannedRun& r) { return pred(r.planned); }));
}

const std::set<std::string> kRunKeys = {"model",        "num_layers",   "hf_config",  "seq_len",    "micro_batch",
                                        "accumulation", "steps",        "warmup_steps", "grad_ckpt", "lora_rank",
                                        "lora_alpha",   "lora_targets", "lora_dropout", "precision", "autocast",
                                        "attn_impl",    "fused_lm_head", "stack"};
// A run on the plan's own lengths also carries them.
const std::set<std::string> kLengthsKeys = {"lengths", "padding", "lengths_seed"};

std::set<std::string> keys(const json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

}  // namespace

TEST(HfPlanTest, CudaPlanSeparatesWhatTheStackAdds) {
  const model::Workload ref = reference("qwen3-1.7b");
  const std::vector<HfPlannedRun> plan = cuda_plan();
  std::set<int64_t> ref_depths;
  for (const HfPlannedRun& r : plan)
    if (r.planned.workload.arch.hidden_size == ref.arch.hidden_size) ref_depths.insert(r.planned.workload.arch.num_layers);
  EXPECT_GE(ref_depths.size(), 2u);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return m.workload.train.grad_ckpt; }), 1u);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return m.workload.stack.lora_dropout > 0; }), 1u);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return !m.workload.stack.autocast; }), 1u);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return m.accumulation > 1; }), 1u);
  EXPECT_GE(count_runs(plan,
                       [](const Measurement& m) {
                         return m.workload.lora.targets == std::vector<model::Target>{model::Target::q, model::Target::v};
                       }),
            1u);
  for (model::AllocatorMode a : {model::AllocatorMode::default_segments, model::AllocatorMode::expandable})
    EXPECT_GE(count_runs(plan, [a](const Measurement& m) { return m.workload.stack.allocator == a; }), 1u)
        << model::allocator_name(a);
  EXPECT_GE(count_runs(plan, [&](const Measurement& m) { return m.workload.arch.hidden_size < ref.arch.hidden_size; }),
            1u);
  // Runs at the reference's full depth, with and without checkpointing, at one sequence (the
  // host's side) and at thousands of tokens (the device's side).
  for (bool ckpt : {false, true})
    for (bool one : {true, false})
      EXPECT_EQ(count_runs(plan,
                           [&](const Measurement& m) {
                             return m.workload.arch.num_layers == ref.arch.num_layers &&
                                    m.workload.train.grad_ckpt == ckpt && (m.micro_batch == 1) == one;
                           }),
                1u)
          << "checkpointing " << ckpt << ", one sequence " << one;
  for (const HfPlannedRun& r : plan) {
    EXPECT_EQ(r.planned.workload.stack.kind, model::StackKind::hf_peft) << r.label();
    EXPECT_LE(r.planned.workload.arch.num_layers, ref.arch.num_layers) << r.label();
    EXPECT_NO_THROW(r.planned.workload.validate()) << r.label();
  }
}

HfPlanOptions sized_for(const std::string& gpu) {
  HfPlanOptions opt;
  opt.reference = reference("qwen3-1.7b");
  opt.hardware = hw::builtin_profile(gpu).hw;
  opt.memory_limit_bytes = static_cast<double>(opt.hardware.memory_bytes);
  return opt;
}

double worst_need_bytes(const HfPlannedRun& r, const model::HardwareModel& hw) {
  return model::CostModel(r.planned.workload, hw).memory(r.planned.micro_batch).worst_reserved_bytes +
         static_cast<double>(hw.value("context_bytes"));
}

TEST(HfPlanTest, AnH200HoldsThePlanAsWritten) {
  const std::vector<HfPlannedRun> sized = default_hf_plan(sized_for("h200")), written = cuda_plan();
  ASSERT_EQ(sized.size(), written.size());
  for (size_t i = 0; i < sized.size(); ++i) EXPECT_EQ(sized[i].label(), written[i].label());
}

TEST(HfPlanTest, ASmallGpuGetsRunsItHolds) {
  // A T4 (15 GiB) cannot hold the plan's device-bound runs (up to ~45 GiB): they shrink to what
  // it holds, and the plan still separates what the stack adds.
  const HfPlanOptions opt = sized_for("t4");
  const std::vector<HfPlannedRun> plan = default_hf_plan(opt);
  const std::vector<HfPlannedRun> written = cuda_plan();
  EXPECT_GT(std::count_if(written.begin(), written.end(),
                          [&](const HfPlannedRun& r) { return worst_need_bytes(r, opt.hardware) > kPlanMemoryShare * opt.memory_limit_bytes; }),
            0);
  std::set<int64_t> depths;
  int64_t most_tokens = 0;
  for (const HfPlannedRun& r : plan) {
    EXPECT_LE(worst_need_bytes(r, opt.hardware), kPlanMemoryShare * opt.memory_limit_bytes) << r.label();
    if (r.planned.workload.arch.hidden_size == 2048) depths.insert(r.planned.workload.arch.num_layers);
    most_tokens = std::max(most_tokens, r.planned.micro_batch * r.planned.workload.train.seq_len);
  }
  EXPECT_GE(depths.size(), 3u);           // 1, 4, 12 and full depth where they fit
  EXPECT_TRUE(depths.count(28));         // full depth at one sequence fits a T4
  // Device-bound runs remain, smaller: the prior's worst case adds its 50% memory error.
  EXPECT_GE(most_tokens, 2048);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return m.workload.train.grad_ckpt; }), 2u);
  for (model::AllocatorMode a : {model::AllocatorMode::default_segments, model::AllocatorMode::expandable})
    EXPECT_GE(count_runs(plan, [a](const Measurement& m) { return m.workload.stack.allocator == a; }), 1u);
  std::set<std::string> labels;
  for (const HfPlannedRun& r : plan) EXPECT_TRUE(labels.insert(r.label()).second) << "twice: " << r.label();
}

TEST(HfPlanTest, VariedOptionsFlipTheUsersOwn) {
  // A user who trains with dropout gets a run without it, and one without autocast one with it.
  HfPlanOptions opt;
  opt.reference = reference("qwen3-1.7b");
  opt.reference.stack.lora_dropout = 0.1;
  opt.reference.stack.autocast = false;
  const std::vector<HfPlannedRun> plan = default_hf_plan(opt);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return m.workload.stack.lora_dropout == 0; }), 1u);
  EXPECT_GE(count_runs(plan, [](const Measurement& m) { return m.workload.stack.autocast; }), 1u);
  // Every other run keeps the user's options.
  EXPECT_GT(count_runs(plan, [](const Measurement& m) { return m.workload.stack.lora_dropout == 0.1; }), plan.size() / 2);
}

TEST(HfPlanTest, NarrowModelCanBeNamedOrLeftOut) {
  HfPlanOptions opt;
  opt.reference = reference("qwen3-1.7b");
  opt.narrow_model = "llama-3.2-1b";
  const auto named = default_hf_plan(opt);
  EXPECT_GE(count_runs(named, [](const Measurement& m) { return m.workload.arch.vocab_size == 128256; }), 1u);
  opt.narrow_model = "none";
  const auto none = default_hf_plan(opt);
  EXPECT_EQ(count_runs(none, [](const Measurement& m) { return m.workload.arch.hidden_size != 2048; }), 0u);
}

TEST(HfPlanTest, CpuPlanRunsOnlyTinySizes) {
  HfPlanOptions opt;
  opt.is_cuda = false;
  opt.reference = reference("tiny");
  opt.reference.stack.autocast = false;
  opt.reference.train.precision = model::Precision::fp32;
  const std::vector<HfPlannedRun> plan = default_hf_plan(opt);
  EXPECT_EQ(plan.size(), 15u);  // 9 of one width, 4 on lengths (2 runs and their replays), 2 fused
  std::set<int64_t> depths;
  for (const HfPlannedRun& r : plan) {
    const Measurement& m = r.planned;
    EXPECT_EQ(m.workload.arch.hidden_size, 64) << r.label();
    EXPECT_LE(m.workload.arch.num_layers, 2) << r.label();
    EXPECT_LE(m.workload.train.seq_len, 64) << r.label();
    EXPECT_LE(m.micro_batch, 4) << r.label();
    EXPECT_FALSE(m.workload.stack.autocast) << r.label();
    depths.insert(m.workload.arch.num_layers);
  }
  EXPECT_EQ(depths.size(), 2u);  // the stack's fit needs two depths
}

TEST(HfPlanTest, PlanJsonHoldsExactlyTheContractsKeysForOneAllocator) {
  const std::vector<HfPlannedRun> plan = cuda_plan();
  for (model::AllocatorMode a : {model::AllocatorMode::default_segments, model::AllocatorMode::expandable}) {
    SCOPED_TRACE(model::allocator_name(a));
    const json j = json::parse(hf_plan_json(plan, "cuda:1", a, 2, 5));
    EXPECT_EQ(keys(j), (std::set<std::string>{"device", "allocator", "runs"}));
    EXPECT_EQ(j["device"], "cuda:1");
    EXPECT_EQ(j["allocator"], model::allocator_name(a));
    const size_t want = count_runs(plan, [a](const Measurement& m) { return m.workload.stack.allocator == a; });
    ASSERT_EQ(j["runs"].size(), want);
    size_t i = 0;
    for (const HfPlannedRun& r : plan) {
      const model::Workload& w = r.planned.workload;
      if (w.stack.allocator != a) continue;
      const json& run = j["runs"][i++];
      std::set<std::string> want_keys = kRunKeys;
      if (r.varied_lengths) want_keys.insert(kLengthsKeys.begin(), kLengthsKeys.end());
      EXPECT_EQ(keys(run), want_keys);
      EXPECT_EQ(run["fused_lm_head"], w.stack.fused_lm_head);
      EXPECT_EQ(run["model"], w.arch.name);
      EXPECT_EQ(run["num_layers"], w.arch.num_layers);
      EXPECT_EQ(run["hf_config"]["num_hidden_layers"], w.arch.num_layers);
      EXPECT_EQ(run["seq_len"], w.train.seq_len);
      EXPECT_EQ(run["micro_batch"], r.planned.micro_batch);
      EXPECT_EQ(run["accumulation"], r.planned.accumulation);
      EXPECT_EQ(run["steps"], r.varied_lengths ? r.steps : 5);
      EXPECT_EQ(run["warmup_steps"], r.varied_lengths ? 1 : 2);
      EXPECT_EQ(run["grad_ckpt"], w.train.grad_ckpt);
      EXPECT_EQ(run["lora_rank"], w.lora.rank);
      EXPECT_EQ(run["lora_dropout"], w.stack.lora_dropout);
      EXPECT_EQ(run["autocast"], w.stack.autocast);
      EXPECT_EQ(run["attn_impl"], "sdpa");
      EXPECT_EQ(run["precision"], "bf16");
      ASSERT_TRUE(run["lora_targets"].is_array());
      EXPECT_EQ(run["lora_targets"].size(), w.lora.targets.size());
    }
  }
}

TEST(HfPlanTest, GemmaAndPhiConfigsCarryTheirTypeWindowLayerTypesAndSoftCaps) {
  const json g = json::parse(hf_config_json(model::preset("gemma-2-2b")));
  EXPECT_EQ(g["model_type"], "gemma2");
  EXPECT_EQ(g["sliding_window"], 4096);
  ASSERT_EQ(g["layer_types"].size(), 26u);
  EXPECT_EQ(g["layer_types"][0], "sliding_attention");
  EXPECT_EQ(g["layer_types"][1], "full_attention");
  EXPECT_EQ(g["final_logit_softcapping"], 30.0);
  EXPECT_EQ(g["attn_logit_softcapping"], 50.0);
  EXPECT_EQ(g["head_dim"], 256);
  const json g3 = json::parse(hf_config_json(model::preset("gemma-3-1b")));
  EXPECT_EQ(g3["model_type"], "gemma3_text");
  EXPECT_TRUE(g3["final_logit_softcapping"].is_null());
  EXPECT_EQ(g3["layer_types"][5], "full_attention");
  const json p = json::parse(hf_config_json(model::preset("phi-3-mini")));
  EXPECT_EQ(p["model_type"], "phi3");
  EXPECT_EQ(p["sliding_window"], 2047);
  EXPECT_FALSE(p.contains("layer_types"));
  // Read back, each is the preset's architecture.
  for (const char* name : {"gemma-2-2b", "gemma-3-1b", "phi-3-mini"}) {
    const model::Architecture& a = model::preset(name);
    const model::Architecture b = model::parse_hf_config(hf_config_json(a), name);
    EXPECT_EQ(b.local_layers, a.local_layers) << name;
    EXPECT_EQ(b.final_logit_softcap, a.final_logit_softcap) << name;
    EXPECT_EQ(b.fused_qkv, a.fused_qkv) << name;
    EXPECT_EQ(b.sandwich_norms, a.sandwich_norms) << name;
    EXPECT_EQ(b.qk_norm, a.qk_norm) << name;
  }
}

TEST(HfPlanTest, HfConfigNamesTheModelTypeTransformersBuilds) {
  for (const char* name : {"qwen3-0.6b", "qwen3-1.7b", "qwen3-8b"}) {
    const json c = json::parse(hf_config_json(model::preset(name)));
    EXPECT_EQ(c["model_type"], "qwen3") << name;
    EXPECT_FALSE(c.contains("attention_bias")) << name;
  }
  const json qwen2 = json::parse(hf_config_json(model::preset("qwen2.5-0.5b")));
  EXPECT_EQ(qwen2["model_type"], "qwen2");
  EXPECT_EQ(qwen2["attention_bias"], true);
  EXPECT_EQ(qwen2["tie_word_embeddings"], true);
  for (const char* name : {"llama-3.2-1b", "mistral-7b"}) {
    const json c = json::parse(hf_config_json(model::preset(name)));
    EXPECT_EQ(c["model_type"], "llama") << name;
    EXPECT_FALSE(c.contains("attention_bias")) << name;
  }
  const model::Architecture& l = model::preset("llama-3.2-1b");
  const json c = json::parse(hf_config_json(l));
  EXPECT_EQ(c["hidden_size"], l.hidden_size);
  EXPECT_EQ(c["intermediate_size"], l.intermediate_size);
  EXPECT_EQ(c["num_attention_heads"], l.num_heads);
  EXPECT_EQ(c["num_key_value_heads"], l.num_kv_heads);
  EXPECT_EQ(c["head_dim"], l.head_dim);
  EXPECT_EQ(c["vocab_size"], l.vocab_size);
  EXPECT_EQ(c["use_cache"], false);  // no DynamicCache copies in the measured step
}

TEST(HfPlanTest, LabelNamesWhatARunVaries) {
  for (const HfPlannedRun& r : cuda_plan()) {
    const std::string label = r.label();
    const model::Workload& w = r.planned.workload;
    EXPECT_EQ(label.find(" ckpt") != std::string::npos, w.train.grad_ckpt) << label;
    EXPECT_EQ(label.find("no-autocast") != std::string::npos, !w.stack.autocast) << label;
    EXPECT_EQ(label.find("dropout=") != std::string::npos, w.stack.lora_dropout > 0) << label;
    EXPECT_NE(label.find(model::allocator_name(w.stack.allocator)), std::string::npos) << label;
  }
}

}  // namespace lorasim::calib

namespace lorasim::calib {
namespace {

std::vector<const HfPlannedRun*> varied_runs(const std::vector<HfPlannedRun>& plan) {
  std::vector<const HfPlannedRun*> v;
  for (const HfPlannedRun& r : plan)
    if (r.varied_lengths) v.push_back(&r);
  return v;
}

}  // namespace

TEST(HfPlanTest, VariedRunsAreTwoMicroBatchesEachWithAReplayOnTheUsersAllocator) {
  for (model::AllocatorMode user : {model::AllocatorMode::default_segments, model::AllocatorMode::expandable}) {
    SCOPED_TRACE(model::allocator_name(user));
    HfPlanOptions opt;
    opt.reference = reference("qwen3-1.7b");
    opt.reference.stack.allocator = user;
    const std::vector<HfPlannedRun> plan = default_hf_plan(opt);
    const std::vector<const HfPlannedRun*> v = varied_runs(plan);
    ASSERT_EQ(v.size(), 4u);
    std::set<int64_t> micro_batches;
    for (size_t i = 0; i < v.size(); i += 2) {
      const HfPlannedRun &run = *v[i], &replay = *v[i + 1];
      micro_batches.insert(run.planned.micro_batch);
      for (const HfPlannedRun* r : {&run, &replay}) {
        EXPECT_EQ(r->planned.workload.stack.allocator, user) << r->label();
        EXPECT_EQ(r->planned.workload.arch.num_layers, 12) << r->label();  // at depth: the hold follows activations
        EXPECT_EQ(r->planned.workload.train.seq_len, 1024) << r->label();
        EXPECT_FALSE(r->planned.workload.stack.fused_lm_head) << r->label();
        EXPECT_EQ(r->lengths.padding(r->planned.workload.train.seq_len), "multiple:64");
        EXPECT_EQ(r->warmup_steps, 1);
      }
      EXPECT_EQ(replay.planned.micro_batch, run.planned.micro_batch);
      EXPECT_EQ(run.planned.accumulation, 1);
      EXPECT_EQ(replay.planned.accumulation, 2);
      // The replay's micro-batches, warm-up included, are the first run's first ones: no new shape.
      EXPECT_LE((replay.warmup_steps + replay.steps) * 2, run.warmup_steps + run.steps);
      EXPECT_EQ(run.steps, kVariedSteps);
      EXPECT_NE(run.label(), replay.label());
    }
    EXPECT_EQ(micro_batches, (std::set<int64_t>{2, 8}));
  }
}

TEST(HfPlanTest, VariedRunsCarryTheirLengthsInThePlanJson) {
  const std::vector<HfPlannedRun> plan = cuda_plan();
  const model::AllocatorMode user = plan.front().planned.workload.stack.allocator;
  const model::AllocatorMode other = user == model::AllocatorMode::expandable ? model::AllocatorMode::default_segments
                                                                              : model::AllocatorMode::expandable;
  EXPECT_EQ(json::parse(hf_plan_json(plan, "cuda", other, 1, 3))["runs"].dump().find("lengths"), std::string::npos);
  const json j = json::parse(hf_plan_json(plan, "cuda", user, 1, 3));
  size_t varied = 0;
  for (const json& run : j["runs"]) {
    if (!run.contains("lengths")) continue;
    ++varied;
    EXPECT_EQ(run["padding"], "multiple:64");
    EXPECT_EQ(run["lengths_seed"], 0);
    int64_t total = 0, prev = 0;
    for (const json& pair : run["lengths"]) {
      EXPECT_GT(pair[0].get<int64_t>(), prev);  // ascending, each length once
      prev = pair[0].get<int64_t>();
      total += pair[1].get<int64_t>();
    }
    EXPECT_EQ(total, 1000);
    EXPECT_EQ(prev, 1024);  // the tail truncated at the run's seq_len
  }
  EXPECT_EQ(varied, 4u);  // all in the user's allocator's process
}

TEST(HfPlanTest, PlanLengthsAreTheLogNormalsQuantilesTruncated) {
  HfPlanLengths spec;
  const auto h = plan_lengths_histogram(spec, 1024);
  std::vector<int64_t> all;
  for (auto [l, c] : h)
    for (int64_t k = 0; k < c; ++k) all.push_back(l);
  ASSERT_EQ(all.size(), 1000u);
  // Quantiles 0.4995 and 0.5005 straddle the median: 256 x exp(0.9 x -/+0.00125) rounds to 256.
  EXPECT_EQ(all[499], 256);
  EXPECT_EQ(all[500], 256);
  // exp(0.9 x 1.5382) x 256 = 1024.8: above the 93.8th percentile every length is truncated.
  EXPECT_EQ(all.back(), 1024);
  EXPECT_EQ(h.back().first, 1024);
  EXPECT_GT(h.back().second, 50);
  EXPECT_LT(h.back().second, 70);
  EXPECT_EQ(plan_lengths_histogram(spec, 1024), h);  // no randomness: the same on every platform
  EXPECT_EQ(spec.padding(1024), "multiple:64");
  // A shorter truncation (the CPU's 64 tokens, a run shrunk for a small GPU) keeps the shape:
  // median a quarter of it, 16 widths of padding, the same share truncated.
  const auto short_h = plan_lengths_histogram(spec, 64);
  EXPECT_EQ(spec.padding(64), "multiple:4");
  int64_t at_16 = 0, at_max = 0;
  for (auto [l, c] : short_h) {
    if (l <= 16) at_16 += c;
    if (l == 64) at_max = c;
  }
  EXPECT_GE(at_16, 500);
  EXPECT_GT(at_max, 50);
  EXPECT_LT(at_max, 70);
  EXPECT_THROW(plan_lengths_histogram(spec, 0), InputError);
}

TEST(HfPlanTest, TheFusedHeadHasItsOwnRunsWhateverTheUserTrainsWith) {
  for (bool user_fused : {false, true}) {
    HfPlanOptions opt;
    opt.reference = reference("qwen3-1.7b");
    opt.reference.stack.fused_lm_head = user_fused;
    const std::vector<HfPlannedRun> plan = default_hf_plan(opt);
    std::set<std::pair<int64_t, int64_t>> fused;
    for (const HfPlannedRun& r : plan)
      if (r.planned.workload.stack.fused_lm_head) {
        fused.insert({r.planned.workload.train.seq_len, r.planned.micro_batch});
        EXPECT_EQ(r.planned.workload.arch.num_layers, 4) << r.label();
        EXPECT_NE(r.label().find("fused-head"), std::string::npos);
      }
    // Device-bound shapes at a few layers, where the head weighs most; every other run fits
    // Transformers' loss, whose device scale the fused runs are measured against.
    EXPECT_EQ(fused, (std::set<std::pair<int64_t, int64_t>>{{2048, 4}, {512, 16}})) << user_fused;
  }
}

}  // namespace lorasim::calib

namespace lorasim::calib {

TEST(HfPlanTest, AQuantizedReferenceAddsPreparedRunsOnItsBaseAndLeavesTheRestFloat) {
  HfPlanOptions opt;
  opt.is_cuda = true;
  opt.reference = reference("qwen3-1.7b");
  opt.reference.stack.allocator = model::AllocatorMode::default_segments;  // the CLI's defaults
  opt.reference.stack.autocast = true;
  const std::vector<HfPlannedRun> plain = default_hf_plan(opt);
  opt.reference.train.weight_format = model::WeightFormat::nf4;
  opt.reference.train.double_quant = false;
  opt.reference.train.kbit_prepare = false;  // as `calibrate --quant` passes it
  const std::vector<HfPlannedRun> plan = default_hf_plan(opt);
  std::vector<std::string> quant, rest;
  for (const HfPlannedRun& r : plan) {
    const model::TrainingSpec& t = r.planned.workload.train;
    if (!t.quantized()) {
      rest.push_back(r.label());
      continue;
    }
    quant.push_back(r.label());
    EXPECT_EQ(t.weight_storage(), model::WeightFormat::nf4) << r.label();
    EXPECT_FALSE(t.double_quant) << r.label();
    EXPECT_TRUE(t.kbit_prepared()) << r.label();  // the probe prepares every quantized model
    EXPECT_TRUE(t.grad_ckpt) << r.label();
    EXPECT_FALSE(r.planned.workload.stack.fused_lm_head) << r.label();
    EXPECT_NO_THROW(r.planned.workload.validate()) << r.label();
  }
  EXPECT_EQ(quant, (std::vector<std::string>{
                       "qwen3-1.7b L=4 s=512 b=1 a=1 ckpt nf4 no-double-quant default",
                       "qwen3-1.7b L=4 s=2048 b=1 a=1 ckpt nf4 no-double-quant default",
                       "qwen3-1.7b L=4 s=2048 b=4 a=1 ckpt nf4 no-double-quant default",
                       "qwen3-1.7b L=4 s=512 b=16 a=1 ckpt nf4 no-double-quant default",
                       "qwen3-1.7b L=28 s=512 b=1 a=1 ckpt nf4 no-double-quant default",
                       "qwen3-1.7b L=28 s=2048 b=4 a=1 ckpt nf4 no-double-quant default"}));
  // Every other run is the float plan's, in its order.
  std::vector<std::string> plain_labels;
  for (const HfPlannedRun& r : plain) plain_labels.push_back(r.label());
  EXPECT_EQ(rest, plain_labels);
  // The probe's plan files: the float runs in one, the quantized in their own (its --quant).
  const json floats = json::parse(hf_plan_json(plan, "cuda", model::AllocatorMode::default_segments, 1, 3));
  const json quants = json::parse(hf_plan_json(plan, "cuda", model::AllocatorMode::default_segments, 1, 3, true));
  ASSERT_EQ(quants["runs"].size(), 6u);
  for (const json& r : quants["runs"]) {
    EXPECT_TRUE(r["grad_ckpt"].get<bool>());
    EXPECT_EQ(keys(r), kRunKeys);  // the probe's plan format is unchanged
  }
  size_t default_float = 0;
  for (const HfPlannedRun& r : plan)
    default_float += !r.planned.workload.train.quantized() &&
                     r.planned.workload.stack.allocator == model::AllocatorMode::default_segments;
  EXPECT_EQ(floats["runs"].size(), default_float);
}

TEST(HfPlanTest, AQuantizedReferenceOnTheCpuIsRefused) {
  HfPlanOptions opt;
  opt.is_cuda = false;
  opt.reference = reference("tiny");
  opt.reference.train.weight_format = model::WeightFormat::nf4;
  opt.reference.train.kbit_prepare = false;
  try {
    default_hf_plan(opt);
    FAIL() << "a quantized CPU plan was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--quant nf4: bitsandbytes quantizes on CUDA only; calibrate a quantized base with --device cuda");
  }
}


TEST(HfPlanTest, LoopPlanSeparatesTheLoopsTerms) {
  HfPlanOptions opt;
  opt.reference.arch = model::preset("qwen3-1.7b");
  opt.reference.stack.kind = model::parse_stack("lightning");
  const std::vector<HfPlannedRun> plan = default_loop_plan(opt);
  std::set<int64_t> depths;
  size_t accumulated = 0, fewer_targets = 0;
  for (const HfPlannedRun& r : plan) {
    const model::Workload& w = r.planned.workload;
    EXPECT_EQ(w.stack.kind, opt.reference.stack.kind) << r.label();
    EXPECT_FALSE(w.stack.fused_lm_head) << r.label();
    depths.insert(w.arch.num_layers);
    accumulated += r.planned.accumulation > 1;
    fewer_targets += w.lora.targets.size() == 2;
  }
  EXPECT_EQ(depths, (std::set<int64_t>{1, 4, 28}));
  EXPECT_EQ(accumulated, 1u);
  EXPECT_EQ(fewer_targets, 1u);
  EXPECT_EQ(plan.size(), 11u);
  // One full-depth micro-batch that keeps the device busy: the loop's device scales.
  EXPECT_EQ(std::count_if(plan.begin(), plan.end(), [](const HfPlannedRun& r) {
              return r.planned.workload.arch.num_layers == 28 && r.planned.workload.train.seq_len == 1024 &&
                     r.planned.micro_batch == 8;
            }),
            1);
  // Each run tells the probe which loop trains it.
  const json j = json::parse(hf_plan_json(plan, "cuda", model::AllocatorMode::default_segments, 1, 3));
  for (const json& run : j["runs"]) EXPECT_EQ(run["stack"], "lightning");
}

}  // namespace lorasim::calib
