// The padded widths a run's micro-batches had: a histogram of the tensors' sequence dimension,
// written `width:count` pairs joined by `;`, ascending (`512:3;1024:13`). Runners record it,
// measurement rows carry it (column padded_lengths, docs/measurements.md), and validate predicts
// each recorded width (simulator/measured_lengths.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lorasim::model {

struct PaddedWidth {
  int64_t width_tokens = 0;   ///< the micro-batch's padded row length
  int64_t micro_batches = 0;  ///< how many timed micro-batches had it
  bool operator==(const PaddedWidth& o) const {
    return width_tokens == o.width_tokens && micro_batches == o.micro_batches;
  }
};
using PaddedWidths = std::vector<PaddedWidth>;

/// Parses `512:3;1024:13`: positive whole widths, strictly ascending, positive whole counts.
/// Throws InputError saying what is wrong with which pair (an empty text is refused too).
PaddedWidths parse_padded_widths(const std::string& text);
/// The text parse_padded_widths reads; "" for none.
std::string format_padded_widths(const PaddedWidths& widths);
/// Throws InputError unless the histogram is what parse_padded_widths accepts.
void validate_padded_widths(const PaddedWidths& widths);

/// Micro-batches in all, the largest width, the share of micro-batches at the largest width, and
/// the mean width over micro-batches.
int64_t micro_batch_count(const PaddedWidths& widths);
int64_t largest_width_tokens(const PaddedWidths& widths);
double largest_width_share(const PaddedWidths& widths);
double mean_width_tokens(const PaddedWidths& widths);

/// Counts the width of each micro-batch as a run feeds them; `widths()` is the histogram.
class PaddedWidthCounter {
 public:
  void add(int64_t width_tokens);
  PaddedWidths widths() const;

 private:
  PaddedWidths sorted_;  // ascending by width
};

}  // namespace lorasim::model
