// Spelling suggestions for unknown names ("did you mean ...?").
#include "model/error.h"

#include <algorithm>
#include <cctype>

namespace lorasim {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string needle = lower(name);
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const std::string hay = lower(c);
    // A candidate that contains the query (or vice versa) is a strong hint: "h100" -> "h100-sxm".
    size_t d = (hay.find(needle) != std::string::npos || needle.find(hay) != std::string::npos)
                   ? 1
                   : edit_distance(needle, hay);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Suggest only when at most about a third of the characters differ.
  if (best_d == std::string::npos || best_d > std::max<size_t>(2, needle.size() / 3)) return "";
  return best;
}

}  // namespace lorasim
