// Human-readable units and a small aligned-table printer.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace lorasim::cli {

std::string human_bytes(double bytes);       ///< "3.42 GiB"
std::string utc_timestamp();                 ///< now, "2026-12-01T14:55:51Z" (ISO 8601, UTC)
std::string human_seconds(double seconds);   ///< "12.3 us", "12.3 ms", "4.56 s", "4.5 min", "2.06 h"
std::string human_count(double n);           ///< "1.72 B", "17.4 M"
std::string fixed(double v, int decimals);   ///< printf("%.*f")
std::string shortest(double v);              ///< printf("%g"): "0.9", not std::to_string's "0.900000"

/// Rows of cells printed with columns right-aligned to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace lorasim::cli
