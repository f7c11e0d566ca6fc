// Distinct shapes of runs drawn without replacement (model/epoch_shapes.h).
#include "model/epoch_shapes.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/error.h"
#include "model/new_shapes.h"

namespace lorasim::model {
namespace {

constexpr int64_t kMaxShuffledSequences = int64_t{1} << 20;
// Shuffled sequences per call at most (over all repetitions): more repetitions where runs are short.
constexpr int64_t kDrawBudget = int64_t{1} << 18;
constexpr int64_t kMaxRepetitions = 64;

/// Every sequence's length, ascending.
std::vector<int32_t> expand(const LengthDistribution& d) {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(d.sequences()));
  for (const LengthBin& bin : d.bins())
    out.insert(out.end(), static_cast<size_t>(bin.count), static_cast<int32_t>(bin.length_tokens));
  return out;
}

/// The shape of a micro-batch of these sequences: (row length, rows).
std::pair<int64_t, int64_t> shape_of(const int32_t* first, int64_t rows, const Padding& padding, int64_t max_len) {
  if (padding.mode == PaddingMode::padding_free) {
    int64_t total = 0;
    for (int64_t i = 0; i < rows; ++i) total += first[i];
    return {total, 1};  // one packed row of every token
  }
  const int64_t longest = *std::max_element(first, first + rows);
  return {padded_length_tokens(padding, longest, max_len), rows};
}

/// Puts a uniformly random choice of `v` (without replacement) into its first `k` places: a partial
/// Fisher-Yates shuffle, written out so that every standard library gives the same figures.
template <typename T>
void shuffle_first(std::vector<T>& v, int64_t k, std::mt19937_64& g) {
  const auto n = static_cast<uint64_t>(v.size());
  for (uint64_t i = 0; i < static_cast<uint64_t>(k) && i + 1 < n; ++i) std::swap(v[i], v[i + g() % (n - i)]);
}

}  // namespace

double epoch_new_shapes(const LengthDistribution& d, const Padding& padding, int64_t b, int64_t micro_batches,
                        bool group_by_length, uint64_t seed) {
  if (b < 1) throw InputError("micro-batch must be positive, got " + std::to_string(b));
  if (micro_batches < 0) throw InputError("micro-batches must be non-negative, got " + std::to_string(micro_batches));
  if (micro_batches == 0) return 0;
  if (padding.mode == PaddingMode::max_length || padding.mode == PaddingMode::packed) return 1;
  const int64_t n = d.sequences();
  if (n > kMaxShuffledSequences) return expected_new_shapes(d, padding, b, micro_batches, group_by_length);

  const std::vector<int32_t> sorted = expand(d);
  const int64_t per_epoch = (n + b - 1) / b;
  // Runs longer than the draw budget (and one epoch) are drawn that far; independent draws over
  // the whole run, which never count more shapes than the data's order does, can only add.
  const int64_t drawn = std::min(micro_batches, std::max(per_epoch, kDrawBudget / b));
  const int64_t reps = std::clamp<int64_t>(kDrawBudget / std::max<int64_t>(1, drawn * b), 1, kMaxRepetitions);
  std::mt19937_64 rng(seed);
  std::vector<int32_t> order = sorted;
  std::vector<std::pair<int64_t, int64_t>> grouped;  // every epoch's groups, in sorted order
  for (int64_t g = 0; group_by_length && g < per_epoch; ++g) {
    const int64_t lo = g * b, rows = std::min(b, n - lo);
    grouped.push_back(shape_of(sorted.data() + lo, rows, padding, d.max_length_tokens()));
  }
  double total = 0;
  for (int64_t rep = 0; rep < reps; ++rep) {
    std::vector<std::pair<int64_t, int64_t>> seen;  // distinct, ascending: a run meets few shapes many times
    int64_t done = 0;
    while (done < drawn) {
      std::vector<std::pair<int64_t, int64_t>> epoch;  // this epoch's micro-batch shapes, in order
      if (group_by_length) {
        // The sorted data cut into groups of b, the groups in random order.
        epoch = grouped;
        shuffle_first(epoch, per_epoch, rng);
      } else {
        shuffle_first(order, std::min(n, (drawn - done) * b), rng);
        for (int64_t g = 0; g < per_epoch && done + g < drawn; ++g) {
          const int64_t lo = g * b, rows = std::min(b, n - lo);
          epoch.push_back(shape_of(order.data() + lo, rows, padding, d.max_length_tokens()));
        }
      }
      for (const auto& s : epoch) {
        if (done == drawn) break;
        const auto at = std::lower_bound(seen.begin(), seen.end(), s);
        if (at == seen.end() || *at != s) seen.insert(at, s);
        ++done;
      }
    }
    total += static_cast<double>(seen.size());
  }
  const double mean = total / static_cast<double>(reps);
  if (drawn == micro_batches) return mean;
  return std::max(mean, expected_new_shapes(d, padding, b, micro_batches, group_by_length));
}

}  // namespace lorasim::model
