// The slowest of N GPUs' steps (slowest_gpu.h).
#include "simulator/slowest_gpu.h"

#include <algorithm>
#include <cmath>


namespace lorasim::sim {

double expected_max_of_sorted(const std::vector<double>& sorted, int64_t ranks) {
  if (sorted.empty()) return 0;
  const double m = static_cast<double>(sorted.size()), n = static_cast<double>(ranks);
  double e = 0, below = 0;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const double at = std::pow(static_cast<double>(k + 1) / m, n);
    e += sorted[k] * (at - below);
    below = at;
  }
  return e;
}

double max_quantile_of_sorted(const std::vector<double>& sorted, int64_t ranks, double q) {
  if (sorted.empty()) return 0;
  const double m = static_cast<double>(sorted.size());
  const double k = std::ceil(m * std::pow(q, 1.0 / static_cast<double>(ranks)) - 1e-9);
  return sorted[static_cast<size_t>(std::clamp(k, 1.0, m)) - 1];
}

double expected_max(const Ladder& l, int64_t ranks) {
  double e = 0, below = 0;
  for (size_t i = 0; i < l.values.size(); ++i) {
    const double at = std::pow(l.cdf[i], static_cast<double>(ranks));
    e += l.values[i] * (at - below);
    below = at;
  }
  return e;
}

double max_quantile(const Ladder& l, int64_t ranks, double q) {
  for (size_t i = 0; i < l.values.size(); ++i)
    if (std::pow(l.cdf[i], static_cast<double>(ranks)) >= q) return l.values[i];
  return l.values.empty() ? 0 : l.values.back();
}

}  // namespace lorasim::sim
