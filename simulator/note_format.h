// How the simulator writes a share and a byte count in its sentences: one formatter for every
// file that writes them.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>

namespace lorasim::sim {

/// A share as a whole percentage, "20%".
inline std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100);
  return buf;
}

/// "1536 MiB". "%.0f", not a cast to int64: a profile's byte count may be out of int64's range (1e30).
inline std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, std::fabs(bytes) < 1e15 * (1 << 20) ? "%.0f MiB" : "%.3g MiB",
                std::trunc(bytes / (1 << 20)));
  return buf;
}

}  // namespace lorasim::sim
