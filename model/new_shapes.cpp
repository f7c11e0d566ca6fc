// Distinct padded shapes among random micro-batches (model/new_shapes.h).
#include "model/new_shapes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "model/error.h"

namespace lorasim::model {
namespace {

/// 1 - (1 - p)^K without losing small p to rounding.
double seen_at_least_once(double p, double k) {
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  return -std::expm1(k * std::log1p(-p));
}

double expected_distinct(const std::map<int64_t, double>& p, double k) {
  double sum = 0;
  for (const auto& [shape, prob] : p) sum += seen_at_least_once(prob, k);
  return sum;
}

/// Padding-free micro-batches are one row of the b sequences' tokens: the sum of b draws.
/// b = 1 is the data's own histogram; larger b takes the sum as normal (mean b*mu, variance
/// b*sigma^2) over whole tokens, which the central limit makes close for the b where the count
/// matters (beyond a few rows nearly every sum is new until the run has seen thousands).
std::map<int64_t, double> padding_free_shapes(const LengthDistribution& d, int64_t b) {
  std::map<int64_t, double> p;
  const double n = static_cast<double>(d.sequences());
  if (b == 1) {
    for (const LengthBin& bin : d.bins()) p[bin.length_tokens] += static_cast<double>(bin.count) / n;
    return p;
  }
  const double mu = d.mean_tokens();
  double var = 0;
  for (const LengthBin& bin : d.bins())
    var += static_cast<double>(bin.count) / n * std::pow(static_cast<double>(bin.length_tokens) - mu, 2);
  const double mean = static_cast<double>(b) * mu, sd = std::sqrt(static_cast<double>(b) * var);
  if (sd < 0.5) {
    p[static_cast<int64_t>(std::llround(mean))] = 1;
    return p;
  }
  const auto lo = static_cast<int64_t>(std::floor(mean - 6 * sd)), hi = static_cast<int64_t>(std::ceil(mean + 6 * sd));
  const double norm = 1 / (sd * std::sqrt(2 * M_PI));
  for (int64_t t = std::max<int64_t>(1, lo); t <= hi; ++t)
    p[t] = norm * std::exp(-0.5 * std::pow((static_cast<double>(t) - mean) / sd, 2));
  return p;
}

/// group_by_length: the data sorted and cut into groups of b, each padded to its longest.
std::map<int64_t, double> grouped_shapes(const LengthDistribution& d, const Padding& padding, int64_t b) {
  // Per bin, not per group: a count of 1e10 sequences makes billions of groups.
  std::map<int64_t, double> p;
  const int64_t n = d.sequences(), groups = (n + b - 1) / b;
  int64_t before = 0;  // groups whose last (longest) sequence lies in an earlier bin
  for (size_t i = 0; i < d.bins().size(); ++i) {
    // Group g ends at rank min((g + 1) b, n): the full groups ending in this bin, and the last,
    // partial group, which ends at rank n, in the last bin.
    const int64_t ending = i + 1 == d.bins().size() ? groups : d.cumulative_count(i) / b;
    if (ending == before) continue;
    const int64_t width = padded_length_tokens(padding, d.bins()[i].length_tokens, d.max_length_tokens());
    p[width] += static_cast<double>(ending - before) / static_cast<double>(groups);
    before = ending;
  }
  return p;
}

}  // namespace

double expected_new_shapes(const LengthDistribution& d, const Padding& padding, int64_t b, int64_t micro_batches,
                           bool group_by_length) {
  if (b < 1) throw InputError("micro-batch must be positive, got " + std::to_string(b));
  if (micro_batches < 0) throw InputError("micro-batches must be non-negative, got " + std::to_string(micro_batches));
  if (micro_batches == 0) return 0;
  const double k = static_cast<double>(micro_batches);
  switch (padding.mode) {
    case PaddingMode::max_length:
    case PaddingMode::packed:
      return 1;  // every micro-batch has rows of the maximum length
    case PaddingMode::padding_free:
      return expected_distinct(padding_free_shapes(d, b), k);
    case PaddingMode::longest:
    case PaddingMode::multiple:
      break;
  }
  if (group_by_length) return expected_distinct(grouped_shapes(d, padding, b), k);
  std::map<int64_t, double> p;
  for (const LengthProbability& lp : longest_of(d, b))
    p[padded_length_tokens(padding, lp.length_tokens, d.max_length_tokens())] += lp.probability;
  return expected_distinct(p, k);
}

}  // namespace lorasim::model
