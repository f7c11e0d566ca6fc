// The length distribution, the longest of a micro-batch, and the padding modes' token counts.
// The file reader is in lengths_read.cpp.
#include "model/lengths.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/checked.h"
#include "model/error.h"

namespace lorasim::model {
namespace {

void need_micro_batch(int64_t micro_batch) {
  if (micro_batch <= 0)
    throw InputError("a micro-batch needs at least one sequence, got " + std::to_string(micro_batch));
}

int64_t round_up(int64_t tokens, int64_t multiple) {
  Checked k;
  const int64_t r = k.mul(tokens / multiple + (tokens % multiple != 0 ? 1 : 0), multiple);
  if (k.overflowed)
    throw InputError("a sequence of " + std::to_string(tokens) + " tokens padded to a multiple of " +
                     std::to_string(multiple) + " is beyond a 64-bit count");
  return r;
}

// F(l_i)^b for each bin i: P(longest of b <= l_i).
std::vector<double> cdf_powers(const LengthDistribution& d, int64_t micro_batch) {
  need_micro_batch(micro_batch);
  std::vector<double> out(d.bins().size());
  const double n = static_cast<double>(d.sequences()), b = static_cast<double>(micro_batch);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t c = d.cumulative_count(i);
    out[i] = c == d.sequences() ? 1.0 : std::pow(static_cast<double>(c) / n, b);
  }
  return out;
}

// E[pad(longest of b)] over random micro-batches, pad being padded_length_tokens.
double expected_padded_length(const LengthDistribution& d, const Padding& p, int64_t micro_batch) {
  const std::vector<double> f = cdf_powers(d, micro_batch);
  double e = 0, below = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const double l = static_cast<double>(padded_length_tokens(p, d.bins()[i].length_tokens, d.max_length_tokens()));
    e += l * (f[i] - below);
    below = f[i];
  }
  return e;
}

// Sorted into consecutive groups of b, each sequence padded to its group's longest: the mean
// padded length per sequence. A full group k (sorted positions kb-b .. kb-1) is padded to the
// length of the bin holding position kb-1, so bin i ends floor(C_i / b) - floor(C_{i-1} / b)
// groups (C_i its running count); the last, partial group of N mod b ends in the longest bin.
// One pass over the bins, however many sequences they count.
double grouped_padded_length(const LengthDistribution& d, const Padding& p, int64_t micro_batch) {
  const double b = static_cast<double>(micro_batch);
  double padded = 0;  // sum over sequences of their group's padded length
  int64_t groups_before = 0;
  for (size_t i = 0; i < d.bins().size(); ++i) {
    const int64_t groups = d.cumulative_count(i) / micro_batch;
    const double l = static_cast<double>(padded_length_tokens(p, d.bins()[i].length_tokens, d.max_length_tokens()));
    padded += static_cast<double>(groups - groups_before) * b * l;
    groups_before = groups;
  }
  const double rest = static_cast<double>(d.sequences() % micro_batch);
  padded += rest * static_cast<double>(padded_length_tokens(p, d.longest_tokens(), d.max_length_tokens()));
  return padded / static_cast<double>(d.sequences());
}

}  // namespace

LengthDistribution LengthDistribution::fixed(int64_t length_tokens) { return from_bins({{length_tokens, 1}}); }

LengthDistribution LengthDistribution::from_bins(std::vector<LengthBin> bins) {
  std::map<int64_t, int64_t> merged;
  Checked k;
  for (const LengthBin& b : bins) {
    if (b.length_tokens <= 0)
      throw InputError("a sequence length must be a positive number of tokens, got " + std::to_string(b.length_tokens));
    if (b.count < 0)
      throw InputError("a count of sequences must not be negative, got " + std::to_string(b.count) +
                       " for length " + std::to_string(b.length_tokens));
    if (b.count > 0) merged[b.length_tokens] = k.add(merged[b.length_tokens], b.count);
  }
  if (k.overflowed) throw InputError("the number of sequences does not fit in a 64-bit integer");
  if (merged.empty()) throw InputError("the token lengths hold no sequence");
  LengthDistribution d;
  for (const auto& [length, count] : merged) d.bins_.push_back({length, count});
  d.max_length_tokens_ = d.bins_.back().length_tokens;
  d.finish();
  return d;
}

void LengthDistribution::finish() {
  Checked k;
  cumulative_.clear();
  sequences_ = total_tokens_ = 0;
  for (const LengthBin& b : bins_) {
    sequences_ = k.add(sequences_, b.count);
    total_tokens_ = k.add(total_tokens_, k.mul(b.length_tokens, b.count));
    cumulative_.push_back(sequences_);
  }
  if (k.overflowed) throw InputError("the sequences' total tokens do not fit in a 64-bit integer");
}

LengthDistribution LengthDistribution::truncated(int64_t max_length_tokens) const {
  if (max_length_tokens <= 0)
    throw InputError("the maximum length must be a positive number of tokens, got " +
                     std::to_string(max_length_tokens));
  LengthDistribution d;
  int64_t cut = 0;  // sequences longer than the maximum; sum of counts that already fit
  for (const LengthBin& b : bins_) {
    if (b.length_tokens < max_length_tokens)
      d.bins_.push_back(b);
    else
      cut += b.count;
  }
  if (cut > 0) d.bins_.push_back({max_length_tokens, cut});
  d.max_length_tokens_ = max_length_tokens;
  d.finish();
  return d;
}

double LengthDistribution::mean_tokens() const {
  return static_cast<double>(total_tokens_) / static_cast<double>(sequences_);
}

double LengthDistribution::cdf(int64_t length_tokens) const {
  const auto it = std::upper_bound(bins_.begin(), bins_.end(), length_tokens,
                                   [](int64_t l, const LengthBin& b) { return l < b.length_tokens; });
  if (it == bins_.begin()) return 0.0;
  const int64_t c = cumulative_[static_cast<size_t>(it - bins_.begin()) - 1];
  return static_cast<double>(c) / static_cast<double>(sequences_);
}

std::vector<LengthProbability> longest_of(const LengthDistribution& d, int64_t micro_batch) {
  const std::vector<double> f = cdf_powers(d, micro_batch);
  std::vector<LengthProbability> out;
  double below = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    out.push_back({d.bins()[i].length_tokens, f[i] - below});
    below = f[i];
  }
  return out;
}

double worst_width_reach(const LengthDistribution& d, const Padding& p, int64_t micro_batch) {
  const std::vector<double> f = cdf_powers(d, micro_batch);
  if (p.mode == PaddingMode::padding_free) return 0;
  const int64_t max = d.max_length_tokens();
  const int64_t worst = padded_length_tokens(p, d.longest_tokens(), max);
  double narrower = 0;  // P(the longest of b pads narrower than the worst) = F(l)^b at the last such bin
  for (size_t i = 0; i < f.size() && padded_length_tokens(p, d.bins()[i].length_tokens, max) < worst; ++i)
    narrower = f[i];
  return 1 - narrower;
}

double expected_longest_tokens(const LengthDistribution& d, int64_t micro_batch) {
  return expected_padded_length(d, Padding{}, micro_batch);
}

int64_t longest_quantile_tokens(const LengthDistribution& d, int64_t micro_batch, double q) {
  if (!(q > 0 && q <= 1)) throw InputError("a quantile must be above 0 and at most 1, got " + std::to_string(q));
  const std::vector<double> f = cdf_powers(d, micro_batch);
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i] >= q) return d.bins()[i].length_tokens;
  return d.longest_tokens();  // f.back() is 1
}

std::string padding_name(const Padding& p) {
  switch (p.mode) {
    case PaddingMode::longest: return "longest";
    case PaddingMode::multiple: return "multiple:" + std::to_string(p.multiple_tokens);
    case PaddingMode::max_length: return "max_length";
    case PaddingMode::packed: return "packed";
    case PaddingMode::padding_free: return "padding-free";
  }
  return "?";
}

Padding parse_padding(const std::string& text) {
  if (text == "longest") return {};
  if (text == "max_length" || text == "max-length") return {PaddingMode::max_length, 0};
  if (text == "packed") return {PaddingMode::packed, 0};
  if (text == "padding-free" || text == "padding_free") return {PaddingMode::padding_free, 0};
  const std::string prefix = "multiple:";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    const std::string n = text.substr(prefix.size());
    const bool digits =
        !n.empty() && n.size() <= 18 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t tokens = digits ? std::stoll(n) : 0;
    if (tokens <= 0)
      throw InputError("padding " + quoted_excerpt(text) + ": the multiple must be a positive whole number of tokens");
    return Padding::multiple_of(tokens);
  }
  throw InputError("unknown padding " + quoted_excerpt(text) + ": allowed are longest, multiple:N, max_length, packed, padding-free");
}

void validate_padding(const Padding& p) {
  if (p.mode == PaddingMode::multiple && p.multiple_tokens <= 0)
    throw InputError("padding to a multiple needs a positive multiple of tokens, got " +
                     std::to_string(p.multiple_tokens));
}

int64_t padded_length_tokens(const Padding& p, int64_t longest_tokens, int64_t max_length_tokens) {
  switch (p.mode) {
    case PaddingMode::longest:
    case PaddingMode::padding_free: return longest_tokens;
    case PaddingMode::multiple: validate_padding(p); return round_up(longest_tokens, p.multiple_tokens);
    case PaddingMode::max_length:
    case PaddingMode::packed: return max_length_tokens;
  }
  return longest_tokens;
}

MicroBatchTokens expected_micro_batch(const LengthDistribution& d, const Padding& p, int64_t micro_batch,
                                      bool group_by_length) {
  need_micro_batch(micro_batch);
  const double b = static_cast<double>(micro_batch), mean = d.mean_tokens();
  const double max_length = static_cast<double>(d.max_length_tokens());
  switch (p.mode) {
    case PaddingMode::padding_free: return {b * mean, b * mean};
    case PaddingMode::packed: return {b * max_length, b * max_length};
    case PaddingMode::max_length: return {b * max_length, b * mean};
    case PaddingMode::longest:
    case PaddingMode::multiple: break;
  }
  const double padded =
      group_by_length ? grouped_padded_length(d, p, micro_batch) : expected_padded_length(d, p, micro_batch);
  return {b * padded, b * mean};
}

WorstMicroBatch worst_micro_batch(const LengthDistribution& d, const Padding& p, int64_t micro_batch) {
  need_micro_batch(micro_batch);
  WorstMicroBatch w;
  w.longest_tokens = d.longest_tokens();
  w.padded_length_tokens = padded_length_tokens(p, w.longest_tokens, d.max_length_tokens());
  // The b longest: whole bins from the top, then part of the next; past the data, the longest again.
  Checked k;
  int64_t left = micro_batch;
  for (auto it = d.bins().rbegin(); it != d.bins().rend() && left > 0; ++it) {
    const int64_t take = std::min(left, it->count);
    w.real_tokens = k.add(w.real_tokens, k.mul(take, it->length_tokens));
    left -= take;
  }
  w.real_tokens = k.add(w.real_tokens, k.mul(left, w.longest_tokens));
  if (p.mode == PaddingMode::padding_free) {
    w.padded_tokens = w.real_tokens;
  } else {
    w.padded_tokens = k.mul(micro_batch, w.padded_length_tokens);
    if (p.mode == PaddingMode::packed) w.real_tokens = w.padded_tokens;  // rows full of tokens
  }
  if (k.overflowed)
    throw InputError("the worst micro-batch of " + std::to_string(micro_batch) + " sequences of up to " +
                     std::to_string(w.padded_length_tokens) + " tokens holds more tokens than a 64-bit count");
  return w;
}

int64_t rows_per_epoch(const LengthDistribution& d, const Padding& p) {
  if (p.mode != PaddingMode::packed) return d.sequences();
  const int64_t m = d.max_length_tokens();
  return d.total_tokens() / m + (d.total_tokens() % m != 0 ? 1 : 0);
}

}  // namespace lorasim::model
