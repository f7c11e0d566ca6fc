// Decimal numbers only (model/decimal.h).
#include "model/decimal.h"

#include <cstdlib>
#include <string>

namespace lorasim::model {
namespace {

size_t digits(std::string_view t, size_t at) {
  size_t n = 0;
  while (at + n < t.size() && t[at + n] >= '0' && t[at + n] <= '9') ++n;
  return n;
}

}  // namespace

size_t leading_decimal(std::string_view text, double& value) {
  value = 0;
  size_t at = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  const size_t whole = digits(text, at);
  at += whole;
  size_t fraction = 0;
  if (at < text.size() && text[at] == '.') {
    fraction = digits(text, at + 1);
    at += 1 + fraction;
  }
  if (whole + fraction == 0) return 0;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    size_t e = at + 1;
    if (e < text.size() && (text[e] == '+' || text[e] == '-')) ++e;
    if (const size_t n = digits(text, e); n > 0) at = e + n;  // "5e" or "5GiB"'s letters are not an exponent
  }
  // strtod reads exactly this grammar the same way; its ERANGE (overflow, subnormal) is the
  // caller's range check.
  const std::string number(text.substr(0, at));
  value = std::strtod(number.c_str(), nullptr);
  return at;
}

std::optional<double> parse_decimal(std::string_view text) {
  double v = 0;
  if (text.empty() || leading_decimal(text, v) != text.size()) return std::nullopt;
  return v;
}

}  // namespace lorasim::model
