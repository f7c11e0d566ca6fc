// The calibration plan and its execution. Runs are grouped by model (depth, rank,
// checkpointing) so that exactly one model lives on the device at a time: the memory
// statistics of a run must see only its own model.
#include "calibrate/calibration.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "calibrate/convert.h"
#include "calibrate/measurement_label.h"
#include "calibrate/runner.h"
#include "model/architecture.h"
#include "model/error.h"

namespace lorasim::calib {

std::string PlannedRun::label() const {
  return run_label(model, depth, seq_len, micro_batch, accumulation, grad_ckpt, lora_rank);
}

namespace {
// A probe option's preset: "none", "auto" (`cuda_default` on CUDA, none on the CPU) or a
// preset name; "" when there is no probe. `probe` names it in errors ("wide").
std::string probe_name(const std::string& requested, const char* cuda_default, const char* probe,
                       const CalibrationOptions& opt, bool is_cuda) {
  if (requested == "none") return "";
  const std::string name = requested == "auto" ? (is_cuda ? cuda_default : "") : requested;
  if (name.empty() || name == opt.reference.arch.name) return "";
  std::vector<std::string> names{"none"};
  for (const auto& a : model::presets()) {
    if (a.name == name) return name;
    names.push_back(a.name);
  }
  std::string msg = "unknown model " + quoted_excerpt(name) + " for the " + probe + " probe";
  if (const std::string near = nearest_name(name, names); !near.empty()) msg += ", did you mean '" + near + "'?";
  throw InputError(msg + " (a preset from `lorasim models`, or none)");
}
}  // namespace

std::string wide_model_name(const CalibrationOptions& opt, bool is_cuda) {
  return probe_name(opt.wide_model, "qwen3-8b", "wide", opt, is_cuda);
}

std::string narrow_model_name(const CalibrationOptions& opt, bool is_cuda) {
  return probe_name(opt.narrow_model, "qwen2.5-0.5b", "narrow", opt, is_cuda);
}

std::vector<PlannedRun> default_plan(const CalibrationOptions& opt, bool is_cuda) {
  const int64_t full = opt.reference.arch.num_layers;
  std::vector<int64_t> depths = opt.depths;
  // On CUDA the depths stay small enough that one micro-batch's kernels fit in the launch
  // queue (about a thousand entries): the host/device split measurement needs the host to
  // enqueue a whole micro-batch while the GPU sleeps.
  if (depths.empty()) {
    depths = is_cuda ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{1, 2};
    for (int64_t& d : depths) d = std::min(d, full);  // a shallower reference: its own depth
  }
  std::vector<int64_t> seqs = opt.seq_lens;
  if (seqs.empty()) seqs = is_cuda ? std::vector<int64_t>{256, 1024, 4096} : std::vector<int64_t>{32, 128};
  const int64_t max_tokens = opt.max_tokens > 0 ? opt.max_tokens : (is_cuda ? 16384 : 1024);
  for (int64_t d : depths)
    if (d > full)
      throw InputError("calibration depth " + std::to_string(d) + " is deeper than '" + opt.reference.arch.name +
                       "', which has " + std::to_string(full) + " layers: choose depths from 1 to " +
                       std::to_string(full), "depths");
  if (opt.deep_depth > full)
    throw InputError("deep depth " + std::to_string(opt.deep_depth) + " is deeper than '" + opt.reference.arch.name +
                     "', which has " + std::to_string(full) + " layers: choose one from 1 to " + std::to_string(full) +
                     ", or 0 for none", "deep_depth");
  std::sort(depths.begin(), depths.end());
  depths.erase(std::unique(depths.begin(), depths.end()), depths.end());

  std::vector<PlannedRun> plan;
  for (int64_t d : depths) {
    // Anchors first (smallest, a middle and the largest micro-batch of every sequence
    // length), then the sizes between: if the time budget cuts the plan short, what is
    // left still spans the space.
    std::vector<PlannedRun> anchors, fill;
    for (int64_t s : seqs) {
      std::vector<int64_t> bs;
      for (int64_t b = 1; b * s <= max_tokens; b *= 2) bs.push_back(b);
      if (bs.empty()) bs.push_back(1);
      for (size_t i = 0; i < bs.size(); ++i) {
        const bool anchor = i == 0 || i + 1 == bs.size() || i == bs.size() / 2;
        (anchor ? anchors : fill).push_back({d, s, bs[i], 2});
      }
    }
    plan.insert(plan.end(), anchors.begin(), anchors.end());
    plan.insert(plan.end(), fill.begin(), fill.end());
  }
  // Checkpointing changes the operator count and the activation profile; a larger rank
  // separates the optimizer's per-parameter from its per-tensor cost.
  const int64_t mid_seq = seqs[seqs.size() / 2];
  const int64_t ckpt_b = std::max<int64_t>(1, std::min<int64_t>(4, max_tokens / mid_seq));
  plan.push_back({depths.back(), mid_seq, 1, 2, true});
  plan.push_back({depths.back(), mid_seq, ckpt_b, 2, true});
  plan.push_back({depths.front(), mid_seq, 2, 2, false, opt.reference.lora.rank * 4});
  // The rest is costlier per run, so a short budget cuts it first.
  //
  // The probes (narrow first, the cheaper): the anchors of the shallowest and deepest split
  // depths, so the device fit sees three widths at equal operator counts.
  for (const std::string& probe : {narrow_model_name(opt, is_cuda), wide_model_name(opt, is_cuda)}) {
    if (probe.empty()) continue;
    const int64_t probe_full = model::preset(probe).num_layers;
    std::vector<int64_t> probe_depths{std::min(depths.front(), probe_full), std::min(depths.back(), probe_full)};
    probe_depths.erase(std::unique(probe_depths.begin(), probe_depths.end()), probe_depths.end());
    for (int64_t d : probe_depths)
      for (int64_t s : seqs) {
        const int64_t top = std::max<int64_t>(1, max_tokens / s);
        int64_t mid = 1;  // the power of two nearest the geometric middle of 1..top
        while (mid * mid * 4 <= top) mid *= 2;
        std::vector<int64_t> bs{1, mid, top};
        bs.erase(std::unique(bs.begin(), bs.end()), bs.end());
        for (int64_t b : bs) {
          PlannedRun p{d, s, b, 2};
          p.model = probe;
          plan.push_back(p);
        }
      }
  }
  // A deeper model, timed whole: its kernels overflow the launch queue, so host and device
  // overlap less than in the shallow runs, which is what a full-depth model sees.
  // Half the reference's depth: deep enough that the launch queue couples host and device as
  // in the full model (an H200 showed it at 28 layers, not at 8), cheap enough for the budget.
  const int64_t deep_default = is_cuda ? std::min<int64_t>(full, std::max<int64_t>(8, full / 2)) : 0;
  const int64_t deep = opt.deep_depth < 0 ? deep_default : std::min(opt.deep_depth, full);
  if (deep > depths.back()) {
    for (int64_t s : {seqs.front(), seqs[seqs.size() / 2]}) {
      const int64_t top = std::max<int64_t>(1, max_tokens / s);
      for (int64_t b : {int64_t{1}, std::max<int64_t>(1, top / 8), std::max<int64_t>(1, top / 2)}) {
        PlannedRun p{deep, s, b, 2};
        p.split = false;
        if (plan.empty() || plan.back().label() != p.label()) plan.push_back(p);
      }
    }
  }
  // One run per split: a measurement file holds each once (calibrate/measurement_checks.h), and
  // repeated sequence lengths or a small token budget would plan some twice.
  std::set<std::string> planned;
  plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const PlannedRun& p) { return !planned.insert(p.label()).second; }),
             plan.end());
  return plan;
}

CalibrationResult run_calibration(const CalibrationOptions& opt, const model::HardwareModel& base,
                                  const ProgressCallback& progress, const std::function<bool()>& should_stop) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };

  CalibrationResult res;
  res.device = resolve_device(opt.device);
  res.plan = default_plan(opt, res.device.is_cuda);

  // Group runs by the model they need, keeping plan order within and across groups.
  using Key = std::tuple<std::string, int64_t, int64_t, bool>;  // model, depth, rank, checkpointing
  std::vector<Key> order;
  std::map<Key, std::vector<const PlannedRun*>> groups;
  for (const PlannedRun& p : res.plan) {
    const Key k{p.model, p.depth, p.lora_rank ? p.lora_rank : opt.reference.lora.rank, p.grad_ckpt};
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(&p);
  }

  size_t done = 0;
  double last_run_s = 0;
  auto interrupted = [&] {
    return CalibrationError("calibration interrupted after " + std::to_string(res.measurements.size()) + " of " +
                            std::to_string(res.plan.size()) + " runs (" + std::to_string(static_cast<int>(elapsed())) +
                            " s); no profile was written");
  };
  for (const Key& key : order) {
    model::Workload w = opt.reference;
    w.stack = model::StackSpec::lorasim_runner();  // whatever the caller set: this runner is what runs
    const std::string& name = std::get<0>(key);
    w.arch = model::truncated(name.empty() ? opt.reference.arch : model::preset(name), std::get<1>(key));
    w.lora.rank = std::get<2>(key);
    w.train.grad_ckpt = std::get<3>(key);
    std::unique_ptr<Trainer> trainer;
    std::map<int64_t, int64_t> oom_at;  // seq_len -> smallest micro-batch that ran out of memory
    for (const PlannedRun* p : groups[key]) {
      if (should_stop && should_stop()) throw interrupted();
      CalibrationProgress ev;
      ev.total = res.plan.size();
      ev.label = p->label();
      const bool past_oom = oom_at.count(p->seq_len) && p->micro_batch >= oom_at[p->seq_len];
      // Leave room for one more run of the last run's length before the budget ends.
      const bool over_budget = elapsed() + last_run_s > opt.time_budget_s;
      if (past_oom || over_budget) {
        ++res.skipped;
        ev.done = ++done;
        ev.elapsed_s = elapsed();
        ev.skipped = true;
        if (progress) progress(ev);
        continue;
      }
      const double run_start = elapsed();
      if (!trainer) trainer = std::make_unique<Trainer>(w, res.device.spec, 0);
      RunSpec spec;
      spec.workload = w;
      spec.workload.train.seq_len = p->seq_len;
      spec.micro_batch = p->micro_batch;
      spec.accumulation = p->accumulation;
      spec.measure_steps = opt.measure_steps;
      spec.memory_limit_bytes = opt.memory_limit_bytes;
      spec.split_host_device = p->split;
      spec.should_stop = should_stop;
      RunResult r;
      try {
        r = trainer->run(spec);
      } catch (const RunInterrupted&) {
        throw interrupted();
      }
      if (r.oom) oom_at[p->seq_len] = std::min(oom_at.count(p->seq_len) ? oom_at[p->seq_len] : INT64_MAX, p->micro_batch);
      res.measurements.push_back(to_measurement(spec.workload, r));
      last_run_s = elapsed() - run_start;
      ev.done = ++done;
      ev.elapsed_s = elapsed();
      ev.result = &res.measurements.back();
      if (progress) progress(ev);
    }
  }
  res.fit = fit_profile(res.measurements, base);
  res.duration_s = elapsed();
  return res;
}

}  // namespace lorasim::calib
