// Reading and writing timed all-reduce rows (allreduce_rows.h).
#include "calibrate/allreduce_rows.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "model/atomic_file.h"
#include "model/bounded_read.h"
#include "model/decimal.h"
#include "model/error.h"

namespace lorasim::calib {

namespace {

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ConfigError(where + ": " + what + " (all-reduce rows: " + kAllreduceCsvHeader + ", docs/data-parallel.md)");
}

double number(const std::string& cell, const std::string& column, const std::string& where) {
  const std::optional<double> v = model::parse_decimal(cell);  // decimal only, as every number lorasim reads
  if (!v || !std::isfinite(*v)) fail(where, column + " " + quoted_excerpt(cell) + " is not a number");
  return *v;
}

}  // namespace

void write_allreduce_csv(const std::vector<AllreduceRow>& rows, const std::string& path) {
  std::ostringstream os;
  os.precision(17);
  os << kAllreduceCsvHeader << "\n";
  for (const AllreduceRow& r : rows) {
    if (r.device.find_first_of(",\n") != std::string::npos || r.backend.find_first_of(",\n") != std::string::npos)
      throw ConfigError("an all-reduce row's device or backend holds a comma or newline: '" + r.device + "'");
    os << r.backend << "," << r.device << "," << r.processes << "," << r.bytes << "," << r.time_s << "\n";
  }
  model::write_file_atomically(path, os.str(), "all-reduce rows");
}

std::vector<AllreduceRow> parse_allreduce_csv(std::istream& in, const std::string& source) {
  model::LineReader lines(in, source);
  std::string line;
  if (!lines.next(line)) fail(source, "the file is empty");
  if (line != kAllreduceCsvHeader) fail(source + ":1", "the header is " + quoted_excerpt(line));
  std::vector<AllreduceRow> rows;
  while (lines.next(line)) {
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(lines.line_number());
    const std::vector<std::string> c = split_commas(line);
    if (c.size() != 5) fail(where, "expected 5 columns, got " + std::to_string(c.size()));
    AllreduceRow r;
    r.backend = c[0];
    r.device = c[1];
    const double processes = number(c[2], "processes", where), bytes = number(c[3], "bytes", where);
    r.time_s = number(c[4], "time_s", where);
    if (processes < 2 || processes != std::floor(processes) || processes > 1e6)
      fail(where, "processes must be a whole number of at least 2 (one process all-reduces nothing)");
    if (!(bytes >= 1) || bytes != std::floor(bytes) || bytes > 9e15) fail(where, "bytes must be a positive whole number");
    if (!(r.time_s > 0)) fail(where, "time_s must be positive seconds");
    if (r.backend.empty()) fail(where, "backend is empty (gloo or nccl)");
    r.processes = static_cast<int64_t>(processes);
    r.bytes = static_cast<int64_t>(bytes);
    rows.push_back(std::move(r));
  }
  if (rows.empty()) fail(source, "the file has no rows");
  return rows;
}

std::vector<AllreduceRow> read_allreduce_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read all-reduce rows '" + path + "': " + std::strerror(errno));
  return parse_allreduce_csv(in, path);
}

std::vector<AllreduceRow> parse_allreduce_csv(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  return parse_allreduce_csv(in, source);
}

}  // namespace lorasim::calib
