// Parsing and counting the histogram of padded widths (padded_widths.h).
#include "model/padded_widths.h"

#include <algorithm>
#include <cctype>

#include "model/error.h"

namespace lorasim::model {
namespace {

// A positive whole number of at most 18 digits (no sign, no exponent, no overflow).
bool whole(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  out = std::stoll(s);
  return out > 0;
}

}  // namespace

PaddedWidths parse_padded_widths(const std::string& text) {
  if (text.empty())
    throw InputError("padded lengths: empty; give width:count pairs joined by ';', e.g. 512:3;1024:13");
  PaddedWidths out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string pair = text.substr(start, end - start);
    const size_t colon = pair.find(':');
    PaddedWidth w;
    if (colon == std::string::npos || !whole(pair.substr(0, colon), w.width_tokens) ||
        !whole(pair.substr(colon + 1), w.micro_batches))
      throw InputError("padded lengths: '" + pair +
                       "' is not width:count (two positive whole numbers, e.g. 1024:13)");
    if (!out.empty() && w.width_tokens <= out.back().width_tokens)
      throw InputError("padded lengths: width " + std::to_string(w.width_tokens) + " after " +
                       std::to_string(out.back().width_tokens) + ": list each width once, ascending");
    out.push_back(w);
    start = end + 1;
  }
  return out;
}

std::string format_padded_widths(const PaddedWidths& widths) {
  std::string s;
  for (const PaddedWidth& w : widths)
    s += (s.empty() ? "" : ";") + std::to_string(w.width_tokens) + ":" + std::to_string(w.micro_batches);
  return s;
}

void validate_padded_widths(const PaddedWidths& widths) {
  if (widths.empty()) throw InputError("padded lengths: no micro-batch widths given");
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i].width_tokens < 1 || widths[i].micro_batches < 1)
      throw InputError("padded lengths: width " + std::to_string(widths[i].width_tokens) + " with count " +
                       std::to_string(widths[i].micro_batches) + ": both must be positive");
    if (i > 0 && widths[i].width_tokens <= widths[i - 1].width_tokens)
      throw InputError("padded lengths: widths must be ascending, each once");
  }
}

int64_t micro_batch_count(const PaddedWidths& widths) {
  int64_t n = 0;
  for (const PaddedWidth& w : widths) n += w.micro_batches;
  return n;
}

int64_t largest_width_tokens(const PaddedWidths& widths) { return widths.empty() ? 0 : widths.back().width_tokens; }

double largest_width_share(const PaddedWidths& widths) {
  const int64_t n = micro_batch_count(widths);
  return n ? static_cast<double>(widths.back().micro_batches) / static_cast<double>(n) : 0;
}

double mean_width_tokens(const PaddedWidths& widths) {
  double tokens = 0;
  for (const PaddedWidth& w : widths)
    tokens += static_cast<double>(w.width_tokens) * static_cast<double>(w.micro_batches);
  const int64_t n = micro_batch_count(widths);
  return n ? tokens / static_cast<double>(n) : 0;
}

void PaddedWidthCounter::add(int64_t width_tokens) {
  if (width_tokens < 1) throw InputError("a micro-batch's padded width must be positive, got " + std::to_string(width_tokens));
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), width_tokens,
                             [](const PaddedWidth& w, int64_t x) { return w.width_tokens < x; });
  if (it != sorted_.end() && it->width_tokens == width_tokens) ++it->micro_batches;
  else sorted_.insert(it, PaddedWidth{width_tokens, 1});
}

PaddedWidths PaddedWidthCounter::widths() const { return sorted_; }

}  // namespace lorasim::model
