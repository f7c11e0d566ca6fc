#include "cli/memory_limit.h"

#include <algorithm>
#include <cctype>

#include "cli/args.h"
#include "cli/format.h"
#include "model/error.h"

namespace lorasim::cli {

void add_memory_limit_options(OptionTable& t, MemoryLimitArgs& a, const char* help) {
  t.custom("memory-limit", "", [&a](const std::string& text) {
     a.text = text;
     a.limit_bytes = parse_bytes("--memory-limit", text);
     const bool bare = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
       return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
     });
     // No device runs a step in a mebibyte: a bare small number lost its unit, and a smaller
     // size with its unit would read "0 MiB" in every figure after.
     if (bare && a.limit_bytes < (int64_t{1} << 20))
       throw InputError("--memory-limit " + text + " is " + text + " bytes: did you mean " + text +
                        "GiB? (sizes take a unit: 24GiB, 500MiB; a plain number is bytes)");
     if (a.limit_bytes < (int64_t{1} << 20))
       throw InputError("--memory-limit " + text + " is " + std::to_string(a.limit_bytes) +
                        " bytes, below 1 MiB: no device trains in that (sizes such as 24GiB or 500MiB)");
   }, help)
      .quantity("memory_limit")
      .toggle("allow-over-memory", a.allow_over,
              "accept a --memory-limit above the GPU's memory (to ask what more memory would fit)");
}

int64_t checked_memory_limit(const MemoryLimitArgs& a, int64_t device_bytes, const std::string& device_name) {
  if (a.limit_bytes > device_bytes && device_bytes > 0 && !a.allow_over)
    throw InputError("--memory-limit " + a.text + " is above the " + human_bytes(static_cast<double>(device_bytes)) +
                     " of the " + device_name + ": give at most that, or add --allow-over-memory if a larger "
                     "memory is meant");
  return a.limit_bytes;
}

}  // namespace lorasim::cli
