// How the simulator's notes write a share: one formatter for every file that makes notes.
#pragma once
#include <cstdio>
#include <string>

namespace lorasim::sim {

/// A share as a whole percentage, "20%".
inline std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100);
  return buf;
}

}  // namespace lorasim::sim
