// Checks of the lengths columns of a measurement row (measurement_lengths.h).
#include "calibrate/measurement_lengths.h"

#include <cstdio>

#include "model/error.h"
#include "model/lengths.h"

namespace lorasim::calib {
namespace {
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

void read_length_columns(const std::string& collation, const std::string& padded_lengths, Measurement& m) {
  if (!collation.empty()) {
    if (collation != "fixed") {
      try {
        model::parse_padding(collation);
      } catch (const Error&) {
        throw InputError("column collation: expected fixed or a --padding form (longest, multiple:N, max_length, "
                         "packed, padding-free), got '" + collation + "'");
      }
    }
    m.collation = collation;
  }
  if (!padded_lengths.empty()) {
    try {
      m.padded_lengths = model::parse_padded_widths(padded_lengths);
    } catch (const Error& e) {
      throw InputError(std::string("column padded_lengths: ") + e.what());
    }
    const int64_t largest = model::largest_width_tokens(m.padded_lengths);
    if (largest != m.workload.train.seq_len)
      throw InputError("column padded_lengths: its largest width is " + std::to_string(largest) + " but seq_len is " +
                       std::to_string(m.workload.train.seq_len) + " (with padded_lengths, seq_len is the largest width)");
    if (m.collation == "fixed" && m.padded_lengths.size() > 1)
      throw InputError("column padded_lengths: collation fixed pads nothing, so every micro-batch is seq_len wide, "
                       "got " + padded_lengths);
  }
  if (measured(m.real_tokens)) {
    if (!(m.real_tokens > 0))
      throw InputError("column real_tokens: expected a positive number of tokens per micro-batch, got 0");
    // More real tokens than the tensors hold is a broken recorder.
    const double width = m.padded_lengths.empty() ? static_cast<double>(m.workload.train.seq_len)
                                                  : model::mean_width_tokens(m.padded_lengths);
    const double held = static_cast<double>(m.micro_batch) * width;
    if (m.real_tokens > held * (1 + 1e-9))
      throw InputError("column real_tokens: " + number(m.real_tokens) + " real tokens per micro-batch exceed the " +
                       number(held) + " its " + std::to_string(m.micro_batch) + " rows of " +
                       (m.padded_lengths.empty() ? "seq_len" : "the mean padded width") + " hold");
  }
}

}  // namespace lorasim::calib
