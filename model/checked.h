// Integer arithmetic that notices overflow. Counts (parameters, bytes, tokens) are int64 and
// are printed as such, so a count that wraps would be printed as a negative result; formulas
// run through a Checked and the caller refuses the workload once, at the end.
#pragma once
#include <cstdint>

namespace lorasim::model {

/// Accumulates whether any step of a formula overflowed int64; after an overflow the results
/// are meaningless and `overflowed` stays true.
struct Checked {
  bool overflowed = false;

  int64_t mul(int64_t a, int64_t b) {
    int64_t r = 0;
    overflowed |= __builtin_mul_overflow(a, b, &r);
    return r;
  }
  int64_t add(int64_t a, int64_t b) {
    int64_t r = 0;
    overflowed |= __builtin_add_overflow(a, b, &r);
    return r;
  }
};

/// The largest double that converts to int64 without overflow (2^63 is just out of range).
inline constexpr double kMaxInt64AsDouble = 9223372036854774784.0;  // 2^63 - 1024

}  // namespace lorasim::model
