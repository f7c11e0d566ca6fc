// --memory-limit and --allow-over-memory: a cap on device memory, read as a size and held
// against the device's own memory, so a typo (10TiB, a bare 15) is caught rather than used.
#pragma once
#include <cstdint>
#include <string>

#include "cli/option_table.h"

namespace lorasim::cli {

struct MemoryLimitArgs {
  int64_t limit_bytes = 0;   ///< 0: the device's memory
  std::string text;          ///< as given, for messages
  bool allow_over = false;   ///< --allow-over-memory: a limit above the device's memory is meant
};
/// --memory-limit (described by `help`) and --allow-over-memory. A bare number below 1 MiB is
/// refused there: "15" is 15 bytes, and more likely a forgotten unit.
void add_memory_limit_options(OptionTable& table, MemoryLimitArgs& args, const char* help);

/// The limit (0 when none was given); one above `device_bytes` is refused, naming the device,
/// unless --allow-over-memory was given.
int64_t checked_memory_limit(const MemoryLimitArgs& args, int64_t device_bytes, const std::string& device_name);

}  // namespace lorasim::cli
