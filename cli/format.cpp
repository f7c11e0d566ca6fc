#include "cli/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace lorasim::cli {

std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string human_bytes(double b) {
  // A profile or a measurement may hold any double: never a cast to an integer, and a value
  // beyond exbibytes in scientific notation rather than a 20-digit figure.
  if (std::isnan(b)) return "unknown bytes";
  if (std::isinf(b)) return b > 0 ? "infinite bytes" : "-infinite bytes";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 6) {
    b /= 1024;
    ++u;
  }
  if (std::fabs(b) >= 1024) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g EiB", b);
    return buf;
  }
  return fixed(b, u == 0 ? 0 : 2) + " " + units[u];
}

std::string human_seconds(double s) {
  if (s < 1e-3) return fixed(s * 1e6, 1) + " us";
  if (s < 1) return fixed(s * 1e3, 1) + " ms";
  if (s < 120) return fixed(s, 2) + " s";
  if (s < 7200) return fixed(s / 60, 1) + " min";
  return fixed(s / 3600, 2) + " h";
}

std::string human_count(double n) {
  if (n >= 1e9) return fixed(n / 1e9, 2) + " B";
  if (n >= 1e6) return fixed(n / 1e6, 2) + " M";
  if (n >= 1e3) return fixed(n / 1e3, 1) + " k";
  return fixed(n, 0);
}

namespace {
// Columns on a terminal: UTF-8 code points, not bytes (a cell such as "±18%").
size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = display_width(header_[c]);
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], display_width(r[c]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size() && c < width.size(); ++c) {
      if (c) s += "  ";
      s += std::string(width[c] - display_width(cells[c]), ' ') + cells[c];
    }
    out << s << '\n';
  };
  line(header_);
  for (const auto& r : rows_) line(r);
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace lorasim::cli
