// The hf-peft calibration plan and its JSON form for the probe.
#include "calibrate/hf_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

using nlohmann::json;

// The shortest sequence a shrunk run keeps: below it a run measures little but overheads.
constexpr int64_t kMinPlanSeqLen = 128;
// The shortest truncation a run on the plan's lengths shrinks to (its median a quarter of it).
constexpr int64_t kMinVariedSeqLen = 256;

std::string dropout_text(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

// The dropout a run that exists to vary dropout uses: PEFT recipes' usual 0.05 when the user
// trains without, none when the user trains with it.
double flipped_dropout(double user) { return user > 0 ? 0.0 : 0.05; }

struct PlanBuilder {
  const HfPlanOptions& opt;
  std::vector<HfPlannedRun> runs;
  /// The reference as the ordinary runs train it: Transformers' loss, whose device scale they
  /// fit (the fused head has runs of its own, add_fused).
  model::Workload base = without_fused_head(opt.reference);

  static model::Workload without_fused_head(model::Workload w) {
    w.stack.fused_lm_head = false;
    w.train.weight_format.reset();  // the float base: quantized runs are add_quantized's
    return w;
  }

  // A run of `arch` truncated to `depth` layers, with the reference's LoRA and stack options.
  HfPlannedRun& add(const model::Architecture& arch, int64_t depth, int64_t seq, int64_t b, int64_t a = 1) {
    HfPlannedRun r;
    r.planned.workload = base;
    r.planned.workload.arch = model::truncated(arch, std::min(depth, arch.num_layers));
    r.planned.workload.train.seq_len = seq;
    r.planned.micro_batch = b;
    r.planned.accumulation = a;
    runs.push_back(r);
    return runs.back();
  }
};

// The predicted worst-case reserved memory of a run, with the CUDA context.
double predicted_need_bytes(const HfPlannedRun& r, const model::HardwareModel& hw) {
  const model::CostModel cost(r.planned.workload, hw);
  return cost.memory(r.planned.micro_batch).worst_reserved_bytes + cost.model().c.context_bytes;
}

// Shrinks runs that would not fit the GPU: first the micro-batch, then the length (the shape
// that separates host from device stays, at a size the GPU holds); a run that fits at neither
// is left out, as are runs a shrink made identical to another.
std::vector<HfPlannedRun> fit_to_memory(std::vector<HfPlannedRun> runs, const HfPlanOptions& opt) {
  const double limit = kPlanMemoryShare * opt.memory_limit_bytes;
  std::vector<HfPlannedRun> kept;
  for (HfPlannedRun& r : runs) {
    Measurement& m = r.planned;
    const bool varied = r.varied_lengths;
    const auto shrink = [&m, varied] {
      // Runs on lengths keep their two micro-batches apart: their truncation shrinks first.
      if (varied && m.workload.train.seq_len > kMinVariedSeqLen) m.workload.train.seq_len /= 2;
      else if (m.micro_batch > 1) m.micro_batch /= 2;
      else if (m.workload.train.seq_len > kMinPlanSeqLen) m.workload.train.seq_len /= 2;
      else return false;
      return true;
    };
    double need = predicted_need_bytes(r, opt.hardware);
    while (need > limit && shrink()) need = predicted_need_bytes(r, opt.hardware);
    if (need > limit) continue;
    const bool duplicate = std::any_of(kept.begin(), kept.end(), [&](const HfPlannedRun& k) { return k.label() == r.label(); });
    if (!duplicate) kept.push_back(r);
  }
  return kept;
}

// The standard normal's quantile: bisection on erfc, exact to double rounding and the same
// on every platform (std::normal_distribution is not).
double normal_quantile(double u) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < u ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Runs on the plan's lengths, for the allocator being calibrated: at two micro-batches, each
// followed by its replay (accumulation 2, the same seeded order, no new shape), so the time
// of new shapes is told from the steady state at the very same widths.
void add_varied(PlanBuilder& p, const model::Architecture& arch, int64_t depth, int64_t max_length,
                std::initializer_list<int64_t> micro_batches) {
  for (int64_t b : micro_batches) {
    for (bool replay : {false, true}) {
      HfPlannedRun& r = p.add(arch, depth, max_length, b, replay ? 2 : 1);
      r.planned.workload.stack.fused_lm_head = false;
      r.varied_lengths = true;
      r.steps = replay ? kVariedReplaySteps : kVariedSteps;
      r.warmup_steps = 1;
    }
  }
}

// Runs through TRL's fused LM head: the ordinary runs' head is Transformers' loss, whose
// device scale they fit; these give what the fused head adds per token.
void add_fused(PlanBuilder& p, const model::Architecture& arch, int64_t depth,
               std::initializer_list<std::pair<int64_t, int64_t>> shapes) {
  for (auto [seq, b] : shapes) p.add(arch, depth, seq, b).planned.workload.stack.fused_lm_head = true;
}

// Runs on the reference's quantized base, as the probe trains it (bitsandbytes, then PEFT's
// prepare_model_for_kbit_training: checkpointing on, fp32 adapters): host-bound single sequences
// give the quantized projections' host cost per call, device-bound shapes their dequantization
// (a share of the device time that shrinks with the tokens: 2048 tokens show it on a small GPU).
void add_quantized(PlanBuilder& p, const model::Architecture& arch, int64_t deep, int64_t deeper) {
  const model::TrainingSpec& user = p.opt.reference.train;
  auto add = [&](int64_t depth, int64_t seq, int64_t b) {
    model::Workload& w = p.add(arch, depth, seq, b).planned.workload;
    w.train.weight_format = user.weight_format;
    w.train.double_quant = user.double_quant;
    w.train.kbit_prepare = true;
    w.train.adapters_in_compute_precision = false;
    w.train.grad_ckpt = true;
  };
  add(deep, 512, 1);
  add(deep, 2048, 1);
  add(deep, 2048, 4);
  add(deep, 512, 16);
  if (arch.num_layers > deeper) {
    add(arch.num_layers, 512, 1);
    add(arch.num_layers, 2048, 4);
  }
}

}  // namespace

std::string HfPlanLengths::padding(int64_t max_length) const {
  return "multiple:" + std::to_string(std::max<int64_t>(1, max_length / std::max<int64_t>(1, widths)));
}

std::vector<std::pair<int64_t, int64_t>> plan_lengths_histogram(const HfPlanLengths& spec, int64_t max_length) {
  if (max_length < 1 || spec.sequences < 1 || !(spec.median_share > 0) || !(spec.sigma >= 0))
    throw InputError("the plan's lengths need a positive maximum, median and count");
  const double median = spec.median_share * static_cast<double>(max_length);
  std::map<int64_t, int64_t> counts;
  const double n = static_cast<double>(spec.sequences);
  for (int64_t i = 0; i < spec.sequences; ++i) {
    const double u = (static_cast<double>(i) + 0.5) / n;
    const double l = std::round(median * std::exp(spec.sigma * normal_quantile(u)));
    ++counts[std::clamp<int64_t>(static_cast<int64_t>(l), 1, max_length)];
  }
  return {counts.begin(), counts.end()};
}

std::string HfPlannedRun::label() const {
  const model::Workload& w = planned.workload;
  const model::StackSpec& st = w.stack;
  std::string s = w.arch.name + " L=" + std::to_string(w.arch.num_layers) + " s=" + std::to_string(w.train.seq_len) +
                  " b=" + std::to_string(planned.micro_batch) + " a=" + std::to_string(planned.accumulation);
  if (w.train.grad_ckpt) s += " ckpt";
  if (w.lora.targets.size() != model::kAllTargets.size()) s += " targets=" + w.lora.targets_string();
  if (st.lora_dropout > 0) s += " dropout=" + dropout_text(st.lora_dropout);
  if (!st.autocast) s += " no-autocast";
  if (st.fused_lm_head) s += " fused-head";
  if (w.train.quantized())
    s += std::string(" ") + model::weight_format_name(w.train.weight_storage()) +
         (w.train.weight_storage() != model::WeightFormat::int8 && !w.train.double_quant ? " no-double-quant" : "");
  if (varied_lengths)
    s += " lengths=lognormal:" + lengths.padding(w.train.seq_len) + " steps=" + std::to_string(steps);
  s += std::string(" ") + model::allocator_name(st.allocator);
  return s;
}

std::vector<HfPlannedRun> default_hf_plan(const HfPlanOptions& opt) {
  opt.reference.validate();
  PlanBuilder p{opt, {}};  // ordinary runs unfused: see PlanBuilder::base
  const model::Architecture& ref = opt.reference.arch;
  const model::StackSpec user = opt.reference.stack;
  model::StackSpec other_alloc = p.base.stack;
  other_alloc.allocator = user.allocator == model::AllocatorMode::expandable ? model::AllocatorMode::default_segments
                                                                              : model::AllocatorMode::expandable;
  if (!opt.is_cuda) {
    if (opt.reference.train.quantized())
      throw InputError(std::string("--quant ") + model::weight_format_name(opt.reference.train.weight_storage()) +
                           ": bitsandbytes quantizes on CUDA only; calibrate a quantized base with --device cuda",
                       "quant");
    // The CPU: a real calibration of tiny sizes. No allocator modes or autocast to separate.
    for (int64_t depth : {1, 2})
      for (int64_t b : {1, 4}) p.add(ref, depth, 32, b);
    p.add(ref, 2, 64, 2);
    p.add(ref, 2, 32, 2, 2);
    p.add(ref, 2, 32, 4).planned.workload.train.grad_ckpt = true;
    p.add(ref, 2, 32, 1).planned.workload.lora.targets = {model::Target::q, model::Target::v};
    p.add(ref, 2, 32, 4).planned.workload.stack.lora_dropout = flipped_dropout(user.lora_dropout);
    add_varied(p, ref, 2, 64, {2, 4});
    add_fused(p, ref, 2, {{32, 4}, {64, 2}});
    return p.runs;
  }
  // Two depths of the reference separate host time per layer from per micro-batch; micro-batches
  // from 1 to 16 sequences cross from host-bound to device-bound.
  const int64_t deep = 4;
  for (int64_t depth : {int64_t{1}, deep})
    for (int64_t b : {1, 4, 16}) p.add(ref, depth, 512, b);
  p.add(ref, deep, 2048, 1);
  p.add(ref, deep, 2048, 4);
  p.add(ref, deep, 256, 32);
  p.add(ref, deep, 512, 4, 2);  // accumulation: the gradient adds of a non-first micro-batch
  for (int64_t b : {1, 16}) p.add(ref, deep, 512, b).planned.workload.train.grad_ckpt = true;
  // Fewer adapters: host time per adapted projection.
  p.add(ref, deep, 512, 1).planned.workload.lora.targets = {model::Target::q, model::Target::v};
  for (int64_t b : {1, 8}) p.add(ref, deep, 512, b).planned.workload.stack.lora_dropout = flipped_dropout(user.lora_dropout);
  for (int64_t b : {1, 8}) p.add(ref, deep, 512, b).planned.workload.stack.autocast = !user.autocast;
  // Deeper runs: at full depth the caching allocator's slack follows the activations, which
  // a few layers (whose peak the loss's buffers dominate) cannot show.
  const int64_t deeper = std::min<int64_t>(12, ref.num_layers);
  p.add(ref, deeper, 1024, 8);
  p.add(ref, deeper, 2048, 4).planned.workload.train.grad_ckpt = true;
  // Full depth, with and without checkpointing, device-bound and host-bound: a few layers weigh
  // the LM head and loss as much as the blocks, so the blocks' device scale, the host's cost
  // per operator and the recomputing forward's need runs shaped like the training they predict.
  // A GPU too small for the device-bound ones runs out of memory there, and the fit goes on
  // without them.
  if (ref.num_layers > deeper)
    for (bool ckpt : {false, true}) {
      p.add(ref, ref.num_layers, 512, 1).planned.workload.train.grad_ckpt = ckpt;
      if (ckpt) p.add(ref, ref.num_layers, 2048, 4).planned.workload.train.grad_ckpt = true;
      else p.add(ref, ref.num_layers, 1024, 8);
    }
  // A narrower model: memory-bound and per-kernel costs weigh more at smaller widths.
  const std::string narrow = opt.narrow_model == "auto" ? "qwen2.5-0.5b" : opt.narrow_model;
  if (narrow != "none" && narrow != ref.name) {
    const model::Architecture& n = model::preset(narrow);
    p.add(n, 2, 512, 1);
    p.add(n, 2, 512, 16);
    p.add(n, 2, 2048, 4);
  }
  // Data of many lengths, in the allocator's process being calibrated (the user's): at depth,
  // where the allocator's hold follows the activations, as the deeper runs above.
  add_varied(p, ref, deeper, 1024, {2, 8});
  // TRL's fused LM head at a few layers, where the head weighs most: device-bound shapes.
  add_fused(p, ref, deep, {{2048, 4}, {512, 16}});
  if (opt.reference.train.quantized()) add_quantized(p, ref, deep, deeper);
  // The other allocator mode, in a process of its own: its reserved memory.
  for (auto [seq, b, ckpt] : {std::tuple<int64_t, int64_t, bool>{512, 4, false}, {512, 16, false}, {2048, 4, false},
                              {512, 16, true}}) {
    HfPlannedRun& r = p.add(ref, deep, seq, b);
    r.planned.workload.stack = other_alloc;
    r.planned.workload.train.grad_ckpt = ckpt;
  }
  return opt.memory_limit_bytes > 0 ? fit_to_memory(std::move(p.runs), opt) : p.runs;
}

std::vector<HfPlannedRun> default_loop_plan(const HfPlanOptions& opt) {
  opt.reference.validate();
  PlanBuilder p{opt, {}};
  const model::Architecture& ref = opt.reference.arch;
  // Host-bound and device-bound micro-batches at two depths (per micro-batch and per layer),
  // an accumulated step (the loop's non-stepping micro-batches), fewer adapters (per operator).
  const int64_t deep = opt.is_cuda ? 4 : 2, seq = opt.is_cuda ? 512 : 32;
  for (int64_t depth : {int64_t{1}, deep})
    for (int64_t b : {int64_t{1}, int64_t{4}, opt.is_cuda ? int64_t{16} : int64_t{8}}) p.add(ref, depth, seq, b);
  p.add(ref, deep, seq, 4, 2);
  p.add(ref, deep, seq, 1).planned.workload.lora.targets = {model::Target::q, model::Target::v};
  // Full depth, host-bound: the operators of the model the user trains; and device-bound (longer
  // sequences), for the loop's device scales: the loop, not the graph, decides how much of the
  // host's dispatch the device waits for (model/coefficient_rows.cpp, hf_and_loop).
  if (opt.is_cuda && ref.num_layers > deep) {
    for (int64_t b : {1, 4}) p.add(ref, ref.num_layers, seq, b);
    p.add(ref, ref.num_layers, 2 * seq, 8);
  }
  return opt.memory_limit_bytes > 0 ? fit_to_memory(std::move(p.runs), opt) : p.runs;
}

std::string hf_config_json(const model::Architecture& a) {
  json j;
  j["model_type"] = a.qk_norm ? "qwen3" : a.attention_bias ? "qwen2" : "llama";
  j["hidden_size"] = a.hidden_size;
  j["intermediate_size"] = a.intermediate_size;
  j["num_hidden_layers"] = a.num_layers;
  j["num_attention_heads"] = a.num_heads;
  j["num_key_value_heads"] = a.num_kv_heads;
  j["head_dim"] = a.head_dim;
  j["vocab_size"] = a.vocab_size;
  j["tie_word_embeddings"] = a.tie_embeddings;
  j["rms_norm_eps"] = a.rms_norm_eps;
  j["rope_theta"] = a.rope_theta;
  if (a.attention_bias && !a.qk_norm) j["attention_bias"] = true;
  j["max_position_embeddings"] = 131072;
  j["use_cache"] = false;
  // Gemma 2/3 and Phi-3: their own model_type and what their config classes read beyond Llama's.
  if (a.sandwich_norms || a.fused_qkv) {
    j["model_type"] = a.model_type;
    j["sliding_window"] = a.sliding_window > 0 ? json(a.sliding_window) : json(nullptr);
  }
  if (a.sandwich_norms) {
    json types = json::array();
    for (int64_t l = 0; l < a.num_layers; ++l) types.push_back(a.is_local(l) ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    j["final_logit_softcapping"] = a.final_logit_softcap > 0 ? json(a.final_logit_softcap) : json(nullptr);
    j["attn_logit_softcapping"] = a.attn_logit_softcap > 0 ? json(a.attn_logit_softcap) : json(nullptr);
  }
  return j.dump();
}

std::string hf_plan_json(const std::vector<HfPlannedRun>& runs, const std::string& device,
                         model::AllocatorMode allocator, int warmup_steps, int measure_steps, bool quantized) {
  json plan;
  plan["device"] = device;
  plan["allocator"] = model::allocator_name(allocator);
  plan["runs"] = json::array();
  for (const HfPlannedRun& r : runs) {
    const model::Workload& w = r.planned.workload;
    if (w.stack.allocator != allocator || w.train.quantized() != quantized) continue;
    json run;
    run["model"] = w.arch.name;
    run["num_layers"] = w.arch.num_layers;
    run["hf_config"] = json::parse(hf_config_json(w.arch));
    run["seq_len"] = w.train.seq_len;
    run["micro_batch"] = r.planned.micro_batch;
    run["accumulation"] = r.planned.accumulation;
    run["steps"] = measure_steps;
    run["warmup_steps"] = warmup_steps;
    run["grad_ckpt"] = w.train.grad_ckpt;
    run["lora_rank"] = w.lora.rank;
    run["lora_alpha"] = w.lora.alpha;
    json targets = json::array();
    for (model::Target t : w.lora.targets) targets.push_back(model::target_name(t));
    run["lora_targets"] = targets;
    run["lora_dropout"] = w.stack.lora_dropout;
    run["precision"] = model::precision_name(w.train.precision);
    run["autocast"] = w.stack.autocast;
    run["attn_impl"] = model::attn_impl_name(w.stack.attn_impl);
    run["fused_lm_head"] = w.stack.fused_lm_head;
    run["stack"] = model::stack_name(w.stack.kind);
    if (r.steps > 0) run["steps"] = r.steps;
    if (r.warmup_steps >= 0) run["warmup_steps"] = r.warmup_steps;
    if (r.varied_lengths) {
      json hist = json::array();
      for (auto [length, count] : plan_lengths_histogram(r.lengths, w.train.seq_len)) hist.push_back({length, count});
      run["lengths"] = hist;
      run["padding"] = r.lengths.padding(w.train.seq_len);
      run["lengths_seed"] = r.lengths.seed;
    }
    plan["runs"].push_back(run);
  }
  return plan.dump(1);
}

}  // namespace lorasim::calib
