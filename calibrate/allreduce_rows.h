// Timed all-reduces, one row per message size: what the runner's process group
// (calibrate/allreduce_timing.h) and the Python probe (python/lorasim_hf/probe_allreduce.py) write
// and calibrate/fit_interconnect.h fits. A CSV file: backend,device,processes,bytes,time_s
// (docs/data-parallel.md). Torch-free.
#pragma once
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace lorasim::calib {

struct AllreduceRow {
  std::string backend;    ///< "gloo" or "nccl": c10d's backend that ran it
  std::string device;     ///< "cpu", or the GPU's name
  int64_t processes = 0;  ///< ranks in the ring
  int64_t bytes = 0;      ///< one message (fp32 elements x 4)
  double time_s = 0;      ///< one all-reduce: the slowest rank's mean over the timed repeats
};

/// The header line of the file, without its newline.
inline constexpr const char* kAllreduceCsvHeader = "backend,device,processes,bytes,time_s";

/// Writes `rows` atomically (model/atomic_file.h); ConfigError where it cannot.
void write_allreduce_csv(const std::vector<AllreduceRow>& rows, const std::string& path);
/// Reads a file written by either writer. ConfigError naming the file and line for a missing
/// header, a short line, a number that does not parse, fewer than 2 processes, a size or time
/// that is not positive, or a file without rows.
std::vector<AllreduceRow> read_allreduce_csv(const std::string& path);
/// The same from text; `source` names it in errors.
std::vector<AllreduceRow> parse_allreduce_csv(const std::string& text, const std::string& source);
/// The same, streamed line by line (model/bounded_read.h: each line at most model::kMaxLineBytes).
std::vector<AllreduceRow> parse_allreduce_csv(std::istream& in, const std::string& source);

}  // namespace lorasim::calib
