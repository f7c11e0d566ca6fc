// Every input file lorasim reads goes through these bounds: a document read whole (config.json,
// a profile) stops at kMaxDocumentBytes, a line-based file (lengths, measurements, all-reduce
// rows) is streamed line by line and stops at a line longer than kMaxLineBytes, and JSON nested
// deeper than kMaxJsonDepth is refused before any recursive walk of it. Without them
// `--lengths /dev/zero` grew until std::bad_alloc and a value nested 100,000 deep overflowed the
// stack. Each refusal names the file, the line where there is one, and the limit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

namespace lorasim::model {

/// A config.json or profile is kilobytes; 16 MiB leaves room for any real one.
inline constexpr size_t kMaxDocumentBytes = size_t{16} << 20;
/// A row of measurements or lengths is under a kilobyte (a run's padded widths a few more).
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;
/// Published configs nest 3 levels; 64 is far beyond any, and far below the stack's limit.
inline constexpr int kMaxJsonDepth = 64;

/// "1 MiB", "16 MiB", "300 bytes": a limit as the messages print it.
std::string limit_text(size_t bytes);

/// The whole of `in` as text, or ConfigError "`source`: ... larger than <max_bytes> (the most
/// lorasim reads of `what`)" once more than `max_bytes` arrive; a read error is a ConfigError too.
std::string read_bounded(std::istream& in, const std::string& source, const std::string& what,
                         size_t max_bytes = kMaxDocumentBytes);

/// Lines of a stream, one at a time, each at most `max_line_bytes` (without its '\n'; a '\r'
/// before it is dropped). A longer line is a ConfigError naming `source`, the line and the limit.
class LineReader {
 public:
  LineReader(std::istream& in, std::string source, size_t max_line_bytes = kMaxLineBytes);
  /// The next line into `line`; false at the end of the stream.
  bool next(std::string& line);
  /// 1-based number of the line `next` returned last.
  int64_t line_number() const { return line_; }

 private:
  std::istream& in_;
  std::string source_;
  size_t max_line_bytes_;
  int64_t line_ = 0;
};

/// Why `text` cannot be parsed safely as JSON -- "nested more than 64 levels deep (at byte N)"
/// -- or "" when its arrays and objects nest at most `max_depth` deep. Brackets inside strings
/// do not count; malformed JSON is left for the parser to report.
std::string json_too_deep(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace lorasim::model
