// The bounded readers every input goes through (model/bounded_read.h).
#include "model/bounded_read.h"

#include <streambuf>

#include "model/error.h"

namespace lorasim::model {

std::string limit_text(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

std::string read_bounded(std::istream& in, const std::string& source, const std::string& what, size_t max_bytes) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw ConfigError(source + ": larger than " + limit_text(max_bytes) + ", the most lorasim reads of " + what +
                        ": is it the right file?");
  }
  if (in.bad()) throw ConfigError(source + ": cannot be read to its end");
  return text;
}

LineReader::LineReader(std::istream& in, std::string source, size_t max_line_bytes)
    : in_(in), source_(std::move(source)), max_line_bytes_(max_line_bytes) {}

bool LineReader::next(std::string& line) {
  line.clear();
  std::streambuf* buf = in_.rdbuf();
  if (buf == nullptr || !in_.good()) return false;
  using traits = std::streambuf::traits_type;
  bool any = false;
  for (;;) {
    const traits::int_type c = buf->sbumpc();
    if (traits::eq_int_type(c, traits::eof())) {
      in_.setstate(std::ios::eofbit);
      break;
    }
    any = true;
    if (traits::to_char_type(c) == '\n') break;
    // The limit is checked as the line grows: a file without newlines (/dev/zero) stops here.
    if (line.size() >= max_line_bytes_)
      throw ConfigError(source_ + ":" + std::to_string(line_ + 1) + ": a line longer than " +
                        limit_text(max_line_bytes_) + ", the most lorasim reads of one line: is it the right file?");
    line.push_back(traits::to_char_type(c));
  }
  if (!any) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_;
  return true;
}

std::string json_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return "nested more than " + std::to_string(max_depth) + " levels deep (at byte " + std::to_string(i + 1) +
               "): no config or measurement nests so deep";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return "";
}

}  // namespace lorasim::model
