// libFuzzer target: measurement files (calib::parse_measurements), built once per format with
// LORASIM_FUZZ_FORMAT "csv" or "jsonl". A ConfigError is
// the expected rejection; any other exception, crash or sanitizer report is a finding. Every
// accepted row must describe a valid workload with no negative time or size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "calibrate/measurement_io.h"
#include "model/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<lorasim::calib::Measurement> rows;
  try {
    rows = lorasim::calib::parse_measurements(text, LORASIM_FUZZ_FORMAT, "fuzz." LORASIM_FUZZ_FORMAT);
  } catch (const lorasim::Error&) {
    return 0;
  }
  if (rows.empty()) std::abort();  // parse_measurements refuses a file without rows
  for (const auto& m : rows) {
    if (m.micro_batch < 1 || m.accumulation < 1) std::abort();
    for (double v : {m.step_time_s, m.micro_batch_time_s, m.host_time_s, m.device_time_s, m.optimizer_time_s,
                     m.peak_allocated_bytes, m.peak_reserved_bytes})
      if (v < 0) std::abort();  // a negative time or size must be refused
    try {
      m.workload.validate();
    } catch (const lorasim::Error&) {
      std::abort();  // accepted, yet invalid
    }
  }
  return 0;
}
