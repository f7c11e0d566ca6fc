// Reading a lengths file: one token length per line, or a `length,count` histogram CSV.
// Every refusal names the file and line, since these files come from the user's own tooling.
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "model/bounded_read.h"
#include "model/checked.h"
#include "model/error.h"
#include "model/lengths.h"

namespace lorasim::model {
namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(ws) - a + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    cells.push_back(trim(line.substr(start, comma - start)));
  cells.push_back(trim(line.substr(start)));
  return cells;
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  // A whole number; `what` names the quantity ("token length", "count").
  int64_t number(const std::string& cell, const char* what) const {
    int64_t v = 0;
    const char* end = cell.data() + cell.size();
    const auto [ptr, ec] = std::from_chars(cell.data(), end, v);
    if (ec == std::errc::result_out_of_range) fail(std::string(what) + " " + quoted_excerpt(cell) + " is beyond a 64-bit count");
    if (cell.empty() || ec != std::errc() || ptr != end)
      fail(std::string("expected a whole number as the ") + what + ", got " + quoted_excerpt(cell));
    return v;
  }

  void add(int64_t length, int64_t count) {
    if (length <= 0) fail("a token length must be positive, got " + std::to_string(length));
    if (count < 0) fail("a count must not be negative, got " + std::to_string(count));
    ++rows_;
    sequences_ = k_.add(sequences_, count);
    tokens_ = k_.add(tokens_, k_.mul(length, count));
    if (k_.overflowed) fail("the number of sequences or their total tokens do not fit in a 64-bit integer");
    if (count > 0) bins_[length] += count;
  }

  // One line, comments and blanks already removed.
  void line(const std::string& text) {
    const std::vector<std::string> cells = split_commas(text);
    if (!started_) {
      started_ = true;
      if (cells.size() == 2) {
        if (lower(cells[0]) != "length" || lower(cells[1]) != "count")
          fail("a histogram needs the header 'length,count' on its first line, got " + quoted_excerpt(text));
        histogram_ = true;
        return;
      }
      if (cells.size() == 1 && lower(cells[0]) == "length") return;  // a one-column header
    }
    if (histogram_) {
      if (cells.size() != 2) fail("expected 'length,count', got " + quoted_excerpt(text));
      add(number(cells[0], "token length"), number(cells[1], "count"));
    } else {
      if (cells.size() != 1)
        fail("expected one token length per line, got " + quoted_excerpt(text) +
             " (a histogram needs the header 'length,count' on its first line)");
      add(number(cells[0], "token length"), 1);
    }
  }

  LengthDistribution finish() const {
    if (bins_.empty())
      throw ConfigError(source_ + (rows_ == 0 ? ": holds no token lengths (expected one per line, or a "
                                                "'length,count' histogram)"
                                              : ": holds no sequences (every count is 0)"));
    std::vector<LengthBin> bins;
    for (const auto& [length, count] : bins_) bins.push_back({length, count});
    return LengthDistribution::from_bins(std::move(bins));
  }

  int64_t line_ = 0;

 private:
  std::string source_;
  bool started_ = false, histogram_ = false;
  Checked k_;
  int64_t rows_ = 0, sequences_ = 0, tokens_ = 0;  // data lines, their counts and tokens
  std::map<int64_t, int64_t> bins_;
};

}  // namespace

LengthDistribution parse_lengths(std::istream& in, const std::string& source) {
  Reader r(source);
  LineReader lines(in, source);  // streamed: a file of any length holds only its bins
  std::string text;
  while (lines.next(text)) {
    r.line_ = lines.line_number();
    if (r.line_ == 1 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // a UTF-8 byte-order mark
    const size_t hash = text.find('#');
    if (hash != std::string::npos) text.erase(hash);
    text = trim(text);
    if (!text.empty()) r.line(text);
  }
  if (in.bad()) throw ConfigError(source + ": cannot be read to its end");
  return r.finish();
}

LengthDistribution read_lengths_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError("cannot read lengths file '" + path + "': it is a directory");
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read lengths file '" + path + "': " + std::strerror(errno));
  return parse_lengths(in, path);
}

}  // namespace lorasim::model
