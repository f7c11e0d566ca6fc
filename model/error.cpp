// Quoting the input at fault in a message, and spelling suggestions for unknown names
// ("did you mean ...?").
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

namespace {

// `text`'s first `max_bytes`, each byte `escape` picks as \xNN.
template <class Escape>
std::string escaped(const std::string& text, size_t max_bytes, Escape escape) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  const size_t shown = std::min(text.size(), max_bytes);
  for (size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (escape(c)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string quoted_excerpt(const std::string& text, size_t max_bytes) {
  // Bytes above 0x7e too: a binary file's bytes are not text to print.
  const std::string body =
      escaped(text, max_bytes, [](unsigned char c) { return c < 0x20 || c > 0x7e || c == '\'' || c == '\\'; });
  if (text.size() <= max_bytes) return "'" + body + "'";
  return "'" + body + "...' (" + std::to_string(text.size()) + " bytes)";
}

std::string excerpt(const std::string& text, size_t max_bytes) {
  // UTF-8 stays: the libraries' own messages may hold it.
  const std::string body = escaped(text, max_bytes, [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  return text.size() <= max_bytes ? body : body + "...";
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  // No name is this long; a megabyte of input must not cost megabytes squared of work.
  if (name.size() > 256) return "";
  const std::string needle = lower(name);
  std::string best;
  size_t best_d = std::string::npos;
  const size_t most = std::max<size_t>(2, needle.size() / 3);  // the most characters that may differ
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
  if (best_d == std::string::npos || best_d > most) return "";
  return best;
}

}  // namespace lorasim
