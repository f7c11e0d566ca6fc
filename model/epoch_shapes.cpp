// Distinct shapes of runs drawn without replacement (model/epoch_shapes.h).
#include "model/epoch_shapes.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
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

/// The first `k` places of shuffle_first(copy, copy.size()) over a fresh copy of `identity`
/// (0, 1, ...), and `g` past every draw of that whole shuffle. The places after k are never read,
/// so their draws are skipped, and the k swaps are undone to leave `identity` as it came.
std::vector<int64_t> first_of_whole_shuffle(std::vector<int64_t>& identity, int64_t k, std::mt19937_64& g) {
  const auto n = static_cast<int64_t>(identity.size());
  const int64_t draws = std::max<int64_t>(0, n - 1), done = std::min(k, draws);
  std::vector<int64_t> swapped_with(static_cast<size_t>(done));
  for (int64_t i = 0; i < done; ++i) {
    swapped_with[i] = i + static_cast<int64_t>(g() % static_cast<uint64_t>(n - i));
    std::swap(identity[i], identity[swapped_with[i]]);
  }
  std::vector<int64_t> first(identity.begin(), identity.begin() + k);
  for (int64_t i = done - 1; i >= 0; --i) std::swap(identity[i], identity[swapped_with[i]]);
  g.discard(static_cast<unsigned long long>(draws - done));
  return first;
}

}  // namespace

EpochShapes::EpochShapes(LengthDistribution d, uint64_t seed) : d_(std::move(d)), seed_(seed) {}

const std::vector<int32_t>& EpochShapes::sorted() {
  if (sorted_.empty()) {
    sorted_.reserve(static_cast<size_t>(d_.sequences()));
    for (const LengthBin& bin : d_.bins())
      sorted_.insert(sorted_.end(), static_cast<size_t>(bin.count), static_cast<int32_t>(bin.length_tokens));
  }
  return sorted_;
}

const EpochShapes::Shuffled& EpochShapes::shuffled() {
  if (!shuffled_) {
    Shuffled s{sorted(), std::mt19937_64(seed_)};
    shuffle_first(s.order, static_cast<int64_t>(s.order.size()), s.after);
    shuffled_ = std::move(s);
  }
  return *shuffled_;
}

double EpochShapes::new_shapes(const Padding& padding, int64_t b, int64_t micro_batches, bool group_by_length) {
  if (b < 1) throw InputError("micro-batch must be positive, got " + std::to_string(b));
  if (micro_batches < 0) throw InputError("micro-batches must be non-negative, got " + std::to_string(micro_batches));
  if (micro_batches == 0) return 0;
  if (padding.mode == PaddingMode::max_length || padding.mode == PaddingMode::packed) return 1;
  const int64_t n = d_.sequences();
  if (n > kMaxShuffledSequences) return expected_new_shapes(d_, padding, b, micro_batches, group_by_length);

  const int64_t per_epoch = (n + b - 1) / b;
  // Runs longer than the draw budget (and one epoch) are drawn that far; independent draws over
  // the whole run, which never count more shapes than the data's order does, can only add.
  const int64_t drawn = std::min(micro_batches, std::max(per_epoch, kDrawBudget / b));
  const int64_t reps = std::clamp<int64_t>(kDrawBudget / std::max<int64_t>(1, drawn * b), 1, kMaxRepetitions);
  // This call's generator and order of the data, as if it shuffled a copy of the sorted data with
  // a generator fresh from the seed. Fisher-Yates leaves a place alone once past it, so a shuffle
  // of the first k places puts in them what the whole shuffle does: a first shuffle of every
  // place, or a first that is also the call's last, reads its places from the shared whole one.
  std::mt19937_64 rng(seed_);
  std::vector<int32_t> order;  // empty while the order is sorted() or shuffled().order
  bool first = true;
  const auto shuffle = [&](int64_t k, bool last) -> const int32_t* {
    if (first && (k + 1 >= n || last)) {
      first = false;
      rng = shuffled().after;  // what a whole shuffle leaves (after the last shuffle nothing draws)
      return shuffled().order.data();
    }
    if (order.empty()) order = first ? sorted() : shuffled().order;
    first = false;
    shuffle_first(order, k, rng);
    return order.data();
  };
  std::vector<std::pair<int64_t, int64_t>> grouped;  // every epoch's groups, in sorted order
  std::vector<int64_t> groups(group_by_length ? static_cast<size_t>(per_epoch) : 0);  // 0, 1, ...
  std::iota(groups.begin(), groups.end(), int64_t{0});
  for (int64_t g = 0; group_by_length && g < per_epoch; ++g) {
    const int64_t lo = g * b, rows = std::min(b, n - lo);
    grouped.push_back(shape_of(sorted().data() + lo, rows, padding, d_.max_length_tokens()));
  }
  double total = 0;
  for (int64_t rep = 0; rep < reps; ++rep) {
    std::vector<std::pair<int64_t, int64_t>> seen;  // distinct, ascending: a run meets few shapes many times
    int64_t done = 0;
    while (done < drawn) {
      std::vector<std::pair<int64_t, int64_t>> epoch;  // this epoch's micro-batch shapes, in order
      if (group_by_length) {
        // The sorted data cut into groups of b, the groups in random order (each epoch afresh).
        for (int64_t g : first_of_whole_shuffle(groups, std::min(per_epoch, drawn - done), rng))
          epoch.push_back(grouped[static_cast<size_t>(g)]);
      } else {
        // The call's last shuffle: only the places its micro-batches read matter.
        const bool last = rep + 1 == reps && drawn - done <= per_epoch;
        const int32_t* data = shuffle(std::min(n, (drawn - done) * b), last);
        for (int64_t g = 0; g < per_epoch && done + g < drawn; ++g) {
          const int64_t lo = g * b, rows = std::min(b, n - lo);
          epoch.push_back(shape_of(data + lo, rows, padding, d_.max_length_tokens()));
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
  return std::max(mean, expected_new_shapes(d_, padding, b, micro_batches, group_by_length));
}

double epoch_new_shapes(const LengthDistribution& d, const Padding& padding, int64_t b, int64_t micro_batches,
                        bool group_by_length, uint64_t seed) {
  return EpochShapes(d, seed).new_shapes(padding, b, micro_batches, group_by_length);
}

}  // namespace lorasim::model
