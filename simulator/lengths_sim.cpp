// Splits of data of many lengths: a cost model per padded length, steps sampled from the
// distribution of the micro-batches' padded lengths, the worst micro-batch for memory.
#include "simulator/lengths_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "model/cost_model.h"
#include "model/error.h"
#include "model/lengths.h"
#include "model/epoch_shapes.h"
#include "model/training_stack.h"
#include "simulator/lengths_dp.h"
#include "simulator/padded_cost.h"
#include "simulator/note_format.h"

namespace lorasim::sim {

namespace {

// Steps of more accumulation than this sample this many micro-batches and scale their sum:
// the mean stays unbiased, the spread (and so the p99) is then wider than the true one.
constexpr int64_t kMaxSampledMicroBatches = 256;
// Padding-free micro-batches larger than this take the mean length per row instead of drawing
// every sequence (the sum of b draws is b x mean to well under a token per row).
constexpr int64_t kMaxDrawnSequences = 256;
// Sequence draws per split at most: a split of large accumulation (or a large padding-free
// micro-batch) samples fewer steps, down to kMinSampledSteps, so that a batch of many divisors
// stays fast.
constexpr int64_t kMaxDrawsPerSplit = 100000;
constexpr int64_t kMinSampledSteps = 64;

double uniform(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

/// Draws the row length of random micro-batches of `b` sequences of one split.
class RowSampler {
 public:
  RowSampler(const model::LengthDistribution& d, const model::Padding& p, int64_t b, bool grouped)
      : d_(d), p_(p), b_(b), grouped_(grouped) {
    const int64_t n = d.sequences();
    groups_ = (n + b - 1) / b;
  }
  int64_t draw(std::mt19937_64& g) const {
    using model::PaddingMode;
    const int64_t max_len = d_.max_length_tokens();
    if (p_.mode == PaddingMode::max_length || p_.mode == PaddingMode::packed) return max_len;
    if (p_.mode == PaddingMode::padding_free) {
      if (b_ > kMaxDrawnSequences) return static_cast<int64_t>(std::ceil(d_.mean_tokens()));
      double total = 0;
      for (int64_t i = 0; i < b_; ++i) total += static_cast<double>(length_at_share(uniform(g)));
      return static_cast<int64_t>(std::ceil(total / static_cast<double>(b_)));
    }
    int64_t longest;
    if (grouped_) {
      // The data sorted and cut into groups of b: a random group's longest is its last.
      const int64_t group = std::min(groups_ - 1, static_cast<int64_t>(uniform(g) * static_cast<double>(groups_)));
      longest = length_at_rank(std::min((group + 1) * b_, d_.sequences()));
    } else {
      // P(longest <= l) = F(l)^b: the inverse at a uniform u is the length at share u^(1/b).
      longest = length_at_share(std::pow(uniform(g), 1.0 / static_cast<double>(b_)));
    }
    return model::padded_length_tokens(p_, longest, max_len);
  }

 private:
  /// The smallest length whose share of sequences at most that long reaches `share`.
  int64_t length_at_share(double share) const {
    const double n = static_cast<double>(d_.sequences());
    return length_at_rank(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(share * n))));
  }
  /// The length of the `rank`-th shortest sequence (1-based).
  int64_t length_at_rank(int64_t rank) const {
    const auto& bins = d_.bins();
    size_t lo = 0, hi = bins.size() - 1;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (d_.cumulative_count(mid) >= rank) hi = mid; else lo = mid + 1;
    }
    return bins[lo].length_tokens;
  }

  const model::LengthDistribution& d_;
  model::Padding p_;
  int64_t b_;
  bool grouped_;
  int64_t groups_ = 1;
};

/// Whether micro-batches of the data can take more than one shape.
bool shapes_vary(const model::LengthDistribution& d, const model::Padding& p) {
  using model::PaddingMode;
  if (p.mode == PaddingMode::max_length || p.mode == PaddingMode::packed) return false;
  if (p.mode == PaddingMode::padding_free) return !d.one_point();
  return model::padded_length_tokens(p, d.shortest_tokens(), d.max_length_tokens()) !=
         model::padded_length_tokens(p, d.longest_tokens(), d.max_length_tokens());
}

/// The row length of the worst micro-batch: its rows' padded length, or for padding-free its
/// tokens spread over its b rows.
int64_t worst_row_tokens(const model::WorstMicroBatch& w, const model::Padding& p, int64_t b) {
  if (p.mode != model::PaddingMode::padding_free) return w.padded_length_tokens;
  return (w.padded_tokens + b - 1) / b;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

double varying_shape_share(const model::Coefficients& c, model::AllocatorMode allocator, bool bound) {
  if (allocator == model::AllocatorMode::expandable)
    return bound ? c.varying_bound_expandable : c.varying_share_expandable;
  return bound ? c.varying_bound_default : c.varying_share_default;
}

void set_epoch_range(const Split& s, LengthFigures& f) {
  const double steps = static_cast<double>(f.steps_per_epoch);
  f.epoch_time_low_s = f.epoch_time_s - steps * (s.step_time_s - s.step_time_low_s);
  f.epoch_time_high_s = f.epoch_time_s + steps * (s.step_time_high_s - s.step_time_s) + f.cold_start_s;
}

void set_worst_micro_batch_memory(const model::Coefficients& c, model::AllocatorMode allocator,
                                  const model::MemoryEstimate& worst, double activations, bool varying, Split& s) {
  s.peak_allocated_bytes = worst.peak_allocated_bytes;
  s.peak_reserved_bytes = worst.peak_reserved_bytes + (varying ? varying_shape_share(c, allocator, false) * activations : 0);
  s.worst_reserved_bytes = worst.worst_reserved_bytes + (varying ? varying_shape_share(c, allocator, true) * activations : 0);
  s.needed_bytes = s.worst_reserved_bytes;
  if (varying && allocator == model::AllocatorMode::default_segments && c.varying_need_default > 0) {
    const double at_limit =
        std::max(worst.worst_reserved_bytes, worst.peak_allocated_bytes + c.varying_need_default * activations);
    s.needed_bytes = std::min(s.worst_reserved_bytes, at_limit);
  }
}

void rank_by_epoch(LengthsResult& out) {
  Result& res = out.result;
  std::vector<size_t> order;
  for (size_t i = 0; i < res.splits.size(); ++i) {
    res.splits[i].rank = 0;
    if (res.splits[i].fits) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return out.lengths[x].epoch_time_s < out.lengths[y].epoch_time_s; });
  for (size_t k = 0; k < order.size(); ++k) res.splits[order[k]].rank = static_cast<int>(k + 1);
  res.recommended.reset();
  if (!order.empty()) res.recommended = order.front();
}

LengthsResult simulate_lengths(const Request& r, const LengthsOptions& o) {
  if (o.sampled_steps < 1)
    throw InputError("sampled steps must be at least 1, got " + std::to_string(o.sampled_steps));
  // A row of padded micro-batches names its widths, not the distribution they came from: which
  // split of this data it measured is not known yet.
  if (!r.measured.empty())
    throw InputError("measured splits replace predictions of fixed-length data only, not of data of many lengths",
                     "measured");
  if (r.gpus != 1 || r.fsdp) return simulate_lengths_data_parallel(r, o);
  const model::LengthDistribution d = r.workload.train.length_distribution();
  const model::Padding padding = r.workload.train.padding;
  model::validate_padding(padding);

  // The fixed-length simulation at the maximum length validates the request (every micro-batch
  // is at most that long) and gives the limit, the usable memory and the notes that do not
  // depend on the splits' figures.
  Request fixed = r;
  fixed.workload.train.lengths.reset();
  fixed.workload.train.padding = model::Padding{};
  fixed.workload.train.seq_len =
      model::padded_length_tokens(padding, d.max_length_tokens(), d.max_length_tokens());
  LengthsResult out;
  out.result = simulate(fixed);
  Result& res = out.result;
  std::vector<std::string> notes;
  // The notes that rest on the splits' figures are made again below from the lengths' figures.
  PaddedLengthCosts cache(r.workload, r.hardware);
  const std::string host_bound_note = model::training_stack(r.workload.stack.kind)
                                          .host_bound_note(percent(cache.at(1).model().c.host_spread));
  for (const auto& n : res.notes)
    if (!starts_with(n, "the recommended split is host-bound") && n != host_bound_note &&
        !starts_with(n, "no split fits"))
      notes.push_back(n);

  std::mt19937_64 rng(o.seed);
  const bool varying = shapes_vary(d, padding);
  const model::AllocatorMode allocator = r.workload.stack.allocator;
  const model::Coefficients& coef = cache.at(1).model().c;
  const double share = varying ? varying_shape_share(coef, allocator, false) : 0;
  const double share_bound = varying ? varying_shape_share(coef, allocator, true) : 0;
  const double static_bytes = cache.static_bytes();
  out.rows_per_epoch = model::rows_per_epoch(d, padding);
  const int64_t steps_per_epoch = (out.rows_per_epoch + r.effective_batch - 1) / r.effective_batch;

  for (Split& s : res.splits) {
    const int64_t b = s.micro_batch, a = s.accumulation;
    const RowSampler sampler(d, padding, b, o.group_by_length);
    const int64_t drawn = std::min(a, kMaxSampledMicroBatches);
    const double rest_scale = drawn > 1 ? static_cast<double>(a - 1) / static_cast<double>(drawn - 1) : 0;
    const int64_t per_micro_batch =
        padding.mode == model::PaddingMode::padding_free && b <= kMaxDrawnSequences ? b : 1;
    const int64_t steps = std::min(o.sampled_steps,
                                   std::max(kMinSampledSteps, kMaxDrawsPerSplit / (drawn * per_micro_batch)));
    const model::OptimizerTime& opt = cache.at(1).optimizer();
    std::vector<double> totals;
    totals.reserve(static_cast<size_t>(steps));
    double sum_total = 0, sum_low = 0, sum_high = 0, sum_host = 0, sum_device = 0;
    double mb_total = 0, mb_host = 0, mb_device = 0;
    int64_t mb_count = 0;
    for (int64_t k = 0; k < steps; ++k) {
      double host = 0, device = 0, rest_host = 0, rest_device = 0;
      const model::CostModel* last = nullptr;
      for (int64_t i = 0; i < drawn; ++i) {
        const model::CostModel& c = cache.at(sampler.draw(rng));
        const model::MicroBatchTime t = c.micro_batch(b, i > 0);
        (i == 0 ? host : rest_host) += t.host_s;
        (i == 0 ? device : rest_device) += t.device_s;
        if (i == 0) {
          mb_total += t.total_s;
          mb_host += t.host_s;
          mb_device += t.device_s;
          ++mb_count;
        }
        last = &c;
      }
      host += rest_scale * rest_host + opt.host_s;
      device += rest_scale * rest_device + opt.device_s;
      const model::StepTime st = last->step_of(host, device);
      totals.push_back(st.total_s);
      sum_total += st.total_s;
      sum_low += st.low_s;
      sum_high += st.high_s;
      sum_host += host;
      sum_device += device;
    }
    const double n = static_cast<double>(steps);
    LengthFigures f;
    // The sampled steps are the steady state (every shape seen); a run from a fresh process
    // also meets each shape a first time: over the run's steps for the mean, over one pass for
    // the epoch, the data drawn without replacement as a trainer's sampler draws it. The first shape is every run's warm-up, fixed lengths' too, which no step
    // time counts; the others are what varying lengths add.
    const auto later_shapes = [&](int64_t micro_batches) {
      return std::max(0.0, model::epoch_new_shapes(d, padding, b, micro_batches, o.group_by_length, o.seed) - 1);
    };
    f.new_shapes_per_step = later_shapes(r.steps * a) / static_cast<double>(r.steps);
    f.new_shape_time_s = coef.new_shape_s * f.new_shapes_per_step;
    s.step_time_s = sum_total / n + f.new_shape_time_s;
    s.step_time_low_s = sum_low / n + f.new_shape_time_s;
    s.step_time_high_s = sum_high / n + f.new_shape_time_s;
    s.host_bound = sum_host > sum_device;
    s.optimizer_time_s = s.host_bound ? opt.host_s : opt.device_s;
    s.micro_batch_time_s = mb_total / static_cast<double>(mb_count);
    s.host_time_s = mb_host / static_cast<double>(mb_count);
    s.device_time_s = mb_device / static_cast<double>(mb_count);
    s.run_time_s = static_cast<double>(r.steps) * s.step_time_s;
    std::sort(totals.begin(), totals.end());
    const size_t q = static_cast<size_t>(std::ceil(0.99 * n)) - 1;
    // The run's steps meet new shapes as its mean does: the p99 step carries the same share, so
    // that new shapes alone never put it below the mean it is the tail of.
    f.step_time_p99_s = totals[std::min(q, totals.size() - 1)] + f.new_shape_time_s;
    f.sampled_step_s = std::move(totals);

    const model::MicroBatchTokens tokens = model::expected_micro_batch(d, padding, b, o.group_by_length);
    f.padding_fraction = tokens.padding_fraction();
    f.mean_padded_length_tokens = tokens.padded_tokens / static_cast<double>(b);
    s.tokens_per_s = tokens.real_tokens * static_cast<double>(a) / s.step_time_s;
    f.steps_per_epoch = steps_per_epoch;
    f.new_shapes_per_epoch = later_shapes(steps_per_epoch * a);
    f.first_step_s = model::process_first_step_s(coef, r.workload.stack.fused_lm_head);
    f.cold_start_s = coef.cold_start_s;
    f.epoch_time_s = static_cast<double>(steps_per_epoch) * (sum_total / n) + coef.new_shape_s * f.new_shapes_per_epoch +
                     f.first_step_s;
    set_epoch_range(s, f);

    const model::WorstMicroBatch worst = model::worst_micro_batch(d, padding, b);
    f.worst_padded_length_tokens = worst_row_tokens(worst, padding, b);
    const model::MemoryEstimate m = cache.at(f.worst_padded_length_tokens).memory(b);
    const double activations = std::max(0.0, m.peak_allocated_bytes - static_bytes);
    f.activation_bytes = activations;
    set_worst_micro_batch_memory(coef, allocator, m, activations, varying, s);
    f.varying_shape_bytes = s.peak_reserved_bytes - m.peak_reserved_bytes;
    f.varying_shape_worst_bytes = s.worst_reserved_bytes - m.worst_reserved_bytes;
    s.fits = s.needed_bytes <= res.usable_memory_bytes;
    out.lengths.push_back(f);
  }

  rank_by_epoch(out);

  if (varying && share > 0)
    notes.push_back(std::string("micro-batches of varying shapes: reserved memory adds the ") +
                    model::allocator_name(allocator) + " allocator's hold for them (" +
                    std::to_string(static_cast<int>(std::lround(share * 100))) + "% of the activations expected, " +
                    std::to_string(static_cast<int>(std::lround(share_bound * 100))) +
                    "% in the worst case; docs/lengths.md)");
  if (res.recommended && res.splits[*res.recommended].host_bound && r.hardware.overlap == model::Overlap::max)
    notes.push_back("the recommended split is host-bound (the CPU's operator dispatch sets its pace): "
                    "such times follow the CPU's speed, which drifts between runs far more than "
                    "device-bound times do (docs/cost-model.md lists the limits)");
  if (std::any_of(res.splits.begin(), res.splits.end(), [](const Split& x) { return x.host_bound; })) {
    const std::string n = host_bound_note;
    if (!n.empty()) notes.push_back(n);
  }
  if (!res.recommended)
    notes.push_back("no split's worst micro-batch (its longest sequences together) fits in the usable memory: "
                    "gradient checkpointing, a shorter maximum length, a smaller LoRA rank or a GPU with more "
                    "memory lower what it needs");
  res.notes = notes;
  return out;
}

}  // namespace lorasim::sim
