// The token lengths of the training data as a distribution, and what micro-batches drawn from
// it hold under each padding mode: the padded length of b sequences (the longest of them), its
// expectation and quantiles, the padding fraction, and the worst micro-batch the data can
// produce. A fixed sequence length is the one-point case. docs/lengths.md derives the formulas.
#pragma once
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace lorasim::model {

/// How many sequences of the data are one length long.
struct LengthBin {
  int64_t length_tokens = 0;
  int64_t count = 0;
};

/// A histogram of token lengths (length -> number of sequences), cut at a maximum length.
/// Immutable once built; every bin has a positive length and a positive count.
class LengthDistribution {
 public:
  /// Every sequence `length_tokens` long: one bin of count 1. The count is no data set's size:
  /// micro-batches larger than it repeat that length (worst_micro_batch says how).
  /// Throws InputError unless the length is positive.
  static LengthDistribution fixed(int64_t length_tokens);
  /// From (length, count) pairs in any order; equal lengths add up, zero counts are dropped.
  /// Throws InputError for a non-positive length, a negative count, no sequence at all, or a
  /// sequence or token total beyond int64.
  static LengthDistribution from_bins(std::vector<LengthBin> bins);

  /// The same sequences truncated at `max_length_tokens`: longer ones become that long, and
  /// padding to the maximum length pads to it even where no sequence reaches it.
  /// Throws InputError unless the maximum is positive.
  LengthDistribution truncated(int64_t max_length_tokens) const;

  const std::vector<LengthBin>& bins() const { return bins_; }  ///< ascending by length
  int64_t sequences() const { return sequences_; }
  int64_t total_tokens() const { return total_tokens_; }
  double mean_tokens() const;
  int64_t shortest_tokens() const { return bins_.front().length_tokens; }
  int64_t longest_tokens() const { return bins_.back().length_tokens; }
  /// The longest a sequence may be: the truncation length, or the longest when not truncated.
  int64_t max_length_tokens() const { return max_length_tokens_; }
  /// Whether every sequence has the same length.
  bool one_point() const { return bins_.size() == 1; }
  /// F(l): the share of sequences at most `length_tokens` long.
  double cdf(int64_t length_tokens) const;
  /// Sequences at most as long as the bin `i` (the running sum of counts up to it).
  int64_t cumulative_count(size_t i) const { return cumulative_[i]; }

 private:
  LengthDistribution() = default;
  void finish();  // sums and the running counts, from bins_

  std::vector<LengthBin> bins_;
  std::vector<int64_t> cumulative_;
  int64_t sequences_ = 0;
  int64_t total_tokens_ = 0;
  int64_t max_length_tokens_ = 0;
};

/// Reads a lengths file: one token length per line (an optional `length` header), or a
/// histogram CSV whose first line is the header `length,count`. '#' starts a comment, blank
/// lines are skipped, zero counts are allowed. Throws ConfigError naming file:line for a bad
/// value, and the file when it cannot be read or holds no sequence.
LengthDistribution read_lengths_file(const std::string& path);
/// The same from a stream; `source` names it in errors.
LengthDistribution parse_lengths(std::istream& in, const std::string& source);

// --- The padded length of a micro-batch --------------------------------------------------

/// Probability that the longest of a micro-batch is `length_tokens` long.
struct LengthProbability {
  int64_t length_tokens = 0;
  double probability = 0;
};
/// The distribution of the longest of `micro_batch` sequences drawn independently from `d`:
/// P(longest <= l) = F(l)^b exactly, so P(longest = l_i) = F(l_i)^b - F(l_{i-1})^b.
/// Throws InputError unless the micro-batch is positive.
std::vector<LengthProbability> longest_of(const LengthDistribution& d, int64_t micro_batch);
/// E[longest of b] = sum_i l_i (F(l_i)^b - F(l_{i-1})^b).
double expected_longest_tokens(const LengthDistribution& d, int64_t micro_batch);
/// The smallest length l with F(l)^b >= q: the longest that a share q of micro-batches stay
/// within (q = 0.99: the p99). Throws InputError unless 0 < q <= 1.
int64_t longest_quantile_tokens(const LengthDistribution& d, int64_t micro_batch, double q);

// --- Padding modes -----------------------------------------------------------------------

enum class PaddingMode {
  longest,     ///< pad every row to the micro-batch's longest (HF's default collators)
  multiple,    ///< the longest rounded up to a multiple (pad_to_multiple_of)
  max_length,  ///< every row at the maximum length (padding="max_length")
  packed,      ///< sequences concatenated into rows of the maximum length (TRL packing)
  padding_free ///< the micro-batch's tokens only, no padding (TRL padding_free)
};

struct Padding {
  PaddingMode mode = PaddingMode::longest;
  int64_t multiple_tokens = 0;  ///< the multiple, for PaddingMode::multiple only

  static Padding multiple_of(int64_t tokens) { return {PaddingMode::multiple, tokens}; }
  bool operator==(const Padding& o) const { return mode == o.mode && multiple_tokens == o.multiple_tokens; }
};

/// "longest", "multiple:64", "max_length", "packed", "padding-free".
std::string padding_name(const Padding& p);
/// Parses padding_name's forms ("padding_free", "max-length" too); throws InputError naming
/// the allowed forms otherwise, or for a multiple that is not a positive whole number.
Padding parse_padding(const std::string& text);
/// Throws InputError for a multiple mode without a positive multiple.
void validate_padding(const Padding& p);

/// The length each row of a micro-batch whose longest sequence is `longest_tokens` is padded
/// to: itself (longest; padding-free, where nothing is padded), rounded up (multiple), or the
/// maximum length (max_length, packed). Monotone in the longest, so it maps quantiles of the
/// longest to quantiles of the padded length.
int64_t padded_length_tokens(const Padding& p, int64_t longest_tokens, int64_t max_length_tokens);

/// Tokens of one micro-batch.
struct MicroBatchTokens {
  double padded_tokens = 0;  ///< what its tensors hold: rows x padded length (padding-free: its tokens)
  double real_tokens = 0;    ///< tokens of its sequences
  /// The share of the padded tokens that are padding: (padded - real) / padded.
  double padding_fraction() const { return padded_tokens > 0 ? 1 - real_tokens / padded_tokens : 0; }
};

/// The expected tokens of a micro-batch of `micro_batch` rows.
/// Random order: longest b E[longest], multiple b E[round_up(longest)], max_length b x max
/// length; each with b x mean real tokens. packed: b rows full of real tokens (b x max length
/// each way: the "wrapped" strategy exactly, best-fit packing up to its rows' fill loss).
/// padding-free: b x mean each way. `group_by_length`: the data sorted by length and cut into
/// consecutive groups of b, each row padded to its group's longest -- the limit of HF's
/// LengthGroupedSampler, which sorts within mega-batches of 50 micro-batches (docs/lengths.md);
/// it changes only the longest and multiple modes.
MicroBatchTokens expected_micro_batch(const LengthDistribution& d, const Padding& p, int64_t micro_batch,
                                      bool group_by_length = false);

/// The worst micro-batch the data can produce: its `micro_batch` longest sequences together.
struct WorstMicroBatch {
  int64_t longest_tokens = 0;  ///< its longest sequence (after truncation)
  int64_t padded_length_tokens = 0;  ///< the length its rows are padded to (padding-free: the longest)
  int64_t padded_tokens = 0;   ///< what its tensors hold
  int64_t real_tokens = 0;     ///< tokens of its sequences
};
/// When the data hold fewer than b sequences, the rest repeat the longest: what a sampler that
/// draws again produces, and the one-point case (whose count is no data set's size) needs.
/// Throws InputError unless the micro-batch is positive, or when its tokens exceed int64.
WorstMicroBatch worst_micro_batch(const LengthDistribution& d, const Padding& p, int64_t micro_batch);

/// How often a random micro-batch of `micro_batch` sequences has the worst one's padded width:
/// 1 - F(l)^b, l the longest length that pads narrower (1 where every length pads alike). Under
/// padding-free a micro-batch's shape is its token count, which the worst one's rarely repeats: 0.
double worst_width_reach(const LengthDistribution& d, const Padding& p, int64_t micro_batch);

/// Rows one pass over the data makes: its sequences, or under packing its tokens in rows of
/// the maximum length (rounded up).
int64_t rows_per_epoch(const LengthDistribution& d, const Padding& p);

}  // namespace lorasim::model
