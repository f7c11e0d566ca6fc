// The columns of a measurement row on data of many lengths (collation, padded_lengths,
// real_tokens; docs/measurements.md): their checks, apart from the file formats' parsing.
#pragma once
#include <string>

#include "calibrate/measurement.h"

namespace lorasim::calib {

/// Sets m.collation and m.padded_lengths from their cells ("" when absent) and checks them
/// with m.real_tokens (already read) against the row: collation is `fixed` or a --padding form;
/// the histogram parses (model::parse_padded_widths), its largest width is seq_len, and under
/// `fixed` it holds one width; real_tokens is positive and at most the micro-batch's rows times
/// the mean padded width (seq_len without a histogram). Throws InputError naming the column.
void read_length_columns(const std::string& collation, const std::string& padded_lengths, Measurement& m);

}  // namespace lorasim::calib
