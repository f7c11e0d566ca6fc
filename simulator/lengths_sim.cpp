// One GPU's steps over data of many lengths: the cost model's step per padded width, steps
// sampled from the distribution of the micro-batches' widths, the worst micro-batch for memory.
#include "simulator/lengths_sim.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "model/epoch_shapes.h"
#include "model/new_shapes.h"
#include "simulator/splits.h"

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
  /// How many numbers of the generator one draw takes.
  static int64_t generator_calls(const model::Padding& p, int64_t b) {
    using model::PaddingMode;
    if (p.mode == PaddingMode::max_length || p.mode == PaddingMode::packed) return 0;
    if (p.mode == PaddingMode::padding_free) return b > kMaxDrawnSequences ? 0 : b;
    return 1;
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

/// The row length of the worst micro-batch: its rows' padded length, or for padding-free its
/// tokens spread over its b rows.
int64_t worst_row_tokens(const model::WorstMicroBatch& w, const model::Padding& p, int64_t b) {
  if (p.mode != model::PaddingMode::padding_free) return w.padded_length_tokens;
  return (w.padded_tokens + b - 1) / b;
}

/// A micro-batch of b rows of one width, the first of its step and an accumulating one: the
/// cost model's, computed once per width a split draws.
struct WidthCost {
  const model::CostModel* cost = nullptr;
  model::MicroBatchTime first, accumulating;
};

}  // namespace

bool shapes_vary(const model::LengthDistribution& d, const model::Padding& p) {
  using model::PaddingMode;
  if (p.mode == PaddingMode::max_length || p.mode == PaddingMode::packed) return false;
  if (p.mode == PaddingMode::padding_free) return !d.one_point();
  return model::padded_length_tokens(p, d.shortest_tokens(), d.max_length_tokens()) !=
         model::padded_length_tokens(p, d.longest_tokens(), d.max_length_tokens());
}

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

double varying_need_share(const model::Coefficients& c, const model::Workload& w, double worst_width_reach) {
  if (!w.train.grad_ckpt) return c.varying_need_default;
  const double reach = std::clamp(worst_width_reach, 0.0, 1.0);
  return c.varying_need_default + reach * (c.varying_need_recurring - c.varying_need_default);
}

void set_worst_micro_batch_memory(const model::Coefficients& c, const model::Workload& w, model::AllocatorMode allocator,
                                  const model::MemoryEstimate& worst, double activations, const ShapeVariation& shapes,
                                  Split& s) {
  const bool varying = shapes.varying;
  const double options =
      varying && !model::runs_worst_case_options(w) ? c.worst_case_margin_options * worst.variable_bytes : 0.0;
  const double fixed_shape_worst = worst.worst_reserved_bytes + options;
  s.peak_allocated_bytes = worst.peak_allocated_bytes;
  s.peak_reserved_bytes = worst.peak_reserved_bytes + (varying ? varying_shape_share(c, allocator, false) * activations : 0);
  s.worst_reserved_bytes = fixed_shape_worst + (varying ? varying_shape_share(c, allocator, true) * activations : 0);
  s.needed_bytes = s.worst_reserved_bytes;
  if (varying && allocator == model::AllocatorMode::default_segments && c.varying_need_default > 0) {
    const double share = varying_need_share(c, w, shapes.worst_width_reach);
    const double at_limit = std::max(fixed_shape_worst, worst.peak_allocated_bytes + share * activations);
    s.needed_bytes = std::min(s.worst_reserved_bytes, at_limit);
  }
}

LengthsSource::LengthsSource(const Request& r, const LengthsOptions& o, ShapeCounts& shapes)
    : r_(r),
      o_(o),
      d_(r.workload.train.length_distribution()),
      padding_(r.workload.train.padding),
      costs_(r.workload, r.hardware),
      shapes_(shapes) {
  varying_ = shapes_vary(d_, padding_);
  rows_per_epoch_ = model::rows_per_epoch(d_, padding_);
  steps_per_epoch_ = (rows_per_epoch_ + r.effective_batch - 1) / r.effective_batch;
}

LengthsSource::SampleSize LengthsSource::sample_size(int64_t b, int64_t a) const {
  SampleSize n;
  n.drawn = std::min(a, kMaxSampledMicroBatches);
  n.per_micro_batch = padding_.mode == model::PaddingMode::padding_free && b <= kMaxDrawnSequences ? b : 1;
  n.steps = std::min(o_.sampled_steps, std::max(kMinSampledSteps, kMaxDrawsPerSplit / (n.drawn * n.per_micro_batch)));
  return n;
}

void LengthsSource::skip_draws(int64_t b, int64_t a, std::mt19937_64& rng) const {
  const SampleSize n = sample_size(b, a);
  rng.discard(static_cast<unsigned long long>(n.steps * n.drawn * RowSampler::generator_calls(padding_, b)));
}

double LengthsSource::later_shapes(int64_t b, int64_t micro_batches, bool independent) {
  // The first shape is every run's warm-up, fixed lengths' too, which no step time counts; the
  // others are what varying lengths add. A run draws the data without replacement, as a
  // trainer's sampler does; `independent`: as independent draws (several GPUs' epoch shards).
  const auto key = std::make_tuple(b, micro_batches, independent);
  const auto it = shapes_.by_run.find(key);
  if (it != shapes_.by_run.end()) return it->second;
  double n = 0;
  if (independent) {
    n = model::expected_new_shapes(d_, padding_, b, micro_batches, o_.group_by_length);
  } else {
    if (!shapes_.epochs) shapes_.epochs.emplace(d_, o_.seed);
    n = shapes_.epochs->new_shapes(padding_, b, micro_batches, o_.group_by_length);
  }
  return shapes_.by_run[key] = std::max(0.0, n - 1);
}

Ladder LengthsSource::one_micro_batch_ladder(int64_t b, int64_t a) {
  // One micro-batch padded to its longest, over the data's bins: P(the longest of b <= l_i) =
  // F(l_i)^b. Empty where it does not apply (accumulation, other paddings, group_by_length) or
  // where the step is not monotone in the length, so that the slowest GPU need not be the one
  // with the longest micro-batch.
  using model::PaddingMode;
  if (a != 1 || o_.group_by_length || (padding_.mode != PaddingMode::longest && padding_.mode != PaddingMode::multiple))
    return {};
  const double n = static_cast<double>(d_.sequences());
  Ladder l;
  for (size_t i = 0; i < d_.bins().size(); ++i) {
    const int64_t w = model::padded_length_tokens(padding_, d_.bins()[i].length_tokens, d_.max_length_tokens());
    const double v = costs_.at(w).step(b, 1).total_s;
    if (!l.values.empty() && v < l.values.back()) return {};
    l.values.push_back(v);
    l.cdf.push_back(std::pow(static_cast<double>(d_.cumulative_count(i)) / n, static_cast<double>(b)));
  }
  return l;
}

GpuStep LengthsSource::step(int64_t b, int64_t a, std::mt19937_64& rng) {
  const RowSampler sampler(d_, padding_, b, o_.group_by_length);
  const SampleSize size = sample_size(b, a);
  const int64_t drawn = size.drawn, steps = size.steps;
  const double rest_scale = drawn > 1 ? static_cast<double>(a - 1) / static_cast<double>(drawn - 1) : 0;
  const model::OptimizerTime opt = costs_.at(1).optimizer();
  std::unordered_map<int64_t, WidthCost> widths;
  const auto at = [&](int64_t width) -> const WidthCost& {
    auto it = widths.find(width);
    if (it == widths.end()) {
      const model::CostModel& c = costs_.at(width);
      it = widths.emplace(width, WidthCost{&c, c.micro_batch(b, false), c.micro_batch(b, true)}).first;
    }
    return it->second;
  };
  std::vector<double> totals;
  totals.reserve(static_cast<size_t>(steps));
  double sum_total = 0, sum_low = 0, sum_high = 0, sum_host = 0, sum_device = 0;
  double mb_total = 0, mb_host = 0, mb_device = 0;
  for (int64_t k = 0; k < steps; ++k) {
    // A sampled step: the first micro-batch, `drawn - 1` accumulating ones scaled to a - 1, the
    // optimizer; combined as CostModel::step combines one of a single width.
    const WidthCost& first = at(sampler.draw(rng));
    double rest_host = 0, rest_device = 0;
    const model::CostModel* last = first.cost;
    for (int64_t i = 1; i < drawn; ++i) {
      const WidthCost& w = at(sampler.draw(rng));
      rest_host += w.accumulating.host_s;
      rest_device += w.accumulating.device_s;
      last = w.cost;
    }
    mb_total += first.first.total_s;
    mb_host += first.first.host_s;
    mb_device += first.first.device_s;
    const double host = first.first.host_s + (rest_scale * rest_host + opt.host_s);
    const double device = first.first.device_s + (rest_scale * rest_device + opt.device_s);
    const model::StepTime st = last->step_of(host, device);
    totals.push_back(st.total_s);
    sum_total += st.total_s;
    sum_low += st.low_s;
    sum_high += st.high_s;
    sum_host += host;
    sum_device += device;
  }
  const double n = static_cast<double>(steps);
  GpuStep g;
  Split& s = g.split;
  s.micro_batch = b;
  s.accumulation = a;
  s.grad_ckpt = r_.workload.train.grad_ckpt;
  LengthFigures& f = g.lengths;
  const model::Coefficients& coef = coefficients();
  f.new_shapes_per_step = later_shapes(b, r_.steps * a, false) / static_cast<double>(r_.steps);
  f.new_shape_time_s = coef.new_shape_s * f.new_shapes_per_step;
  g.steady_s = sum_total / n;
  s.step_time_s = g.steady_s + f.new_shape_time_s;
  s.step_time_low_s = sum_low / n + f.new_shape_time_s;
  s.step_time_high_s = sum_high / n + f.new_shape_time_s;
  s.host_bound = sum_host > sum_device;
  s.optimizer_time_s = s.host_bound ? opt.host_s : opt.device_s;
  s.micro_batch_time_s = mb_total / n;
  s.host_time_s = mb_host / n;
  s.device_time_s = mb_device / n;
  g.first_device_s = g.accumulating_device_s = s.device_time_s;  // the mean micro-batch's backward hides the collectives
  std::sort(totals.begin(), totals.end());
  const size_t q = static_cast<size_t>(std::ceil(0.99 * n)) - 1;
  g.steady_p99_s = totals[std::min(q, totals.size() - 1)];
  f.sampled_step_s = std::move(totals);
  g.varies = true;
  g.new_shape_s = coef.new_shape_s;
  if (r_.gpus > 1) g.exact = one_micro_batch_ladder(b, a);

  const model::MicroBatchTokens tokens = model::expected_micro_batch(d_, padding_, b, o_.group_by_length);
  f.padding_fraction = tokens.padding_fraction();
  f.mean_padded_length_tokens = tokens.padded_tokens / static_cast<double>(b);
  g.tokens_per_step = tokens.real_tokens * static_cast<double>(a) * static_cast<double>(r_.gpus);
  f.steps_per_epoch = steps_per_epoch_;
  f.new_shapes_per_epoch = later_shapes(b, steps_per_epoch_ * a, r_.gpus > 1);  // one GPU's
  f.first_step_s = model::process_first_step_s(coef, r_.workload.stack.fused_lm_head);
  f.cold_start_s = coef.cold_start_s;

  // Every micro-batch is at most the maximum length: its memory is a byte count.
  const int64_t max_row = model::padded_length_tokens(padding_, d_.max_length_tokens(), d_.max_length_tokens());
  check_byte_count(costs_.at(max_row).memory(b), b, max_row);
  const model::WorstMicroBatch worst = model::worst_micro_batch(d_, padding_, b);
  f.worst_padded_length_tokens = worst_row_tokens(worst, padding_, b);
  const model::MemoryEstimate m = costs_.at(f.worst_padded_length_tokens).memory(b);
  g.worst_memory = m;
  f.activation_bytes = std::max(0.0, m.peak_allocated_bytes - costs_.static_bytes());
  f.worst_width_reach = varying_ ? model::worst_width_reach(d_, padding_, b) : 1.0;
  if (varying_ && r_.workload.stack.allocator == model::AllocatorMode::default_segments)
    f.varying_need_share = varying_need_share(coef, r_.workload, f.worst_width_reach);
  set_worst_micro_batch_memory(coef, r_.workload, r_.workload.stack.allocator, m, f.activation_bytes,
                               {varying_, f.worst_width_reach}, s);
  f.varying_shape_bytes = s.peak_reserved_bytes - m.peak_reserved_bytes;
  f.varying_shape_worst_bytes = s.worst_reserved_bytes - m.worst_reserved_bytes;
  return g;
}

}  // namespace lorasim::sim
