// The one reading of a number in lorasim's inputs (flags, measurement cells, all-reduce rows):
// decimal only. std::stod also reads hex ("0x10" is 16, "0x1p-2" a quarter), "inf", "nan" and
// leading spaces, so the same text was a number in one place and refused in another.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace lorasim::model {

/// The length of the decimal number that starts `text` -- an optional sign, digits with at
/// most one '.', at least one digit, then an optional exponent (e or E, an optional sign,
/// digits) -- and its value in `value`; 0 when `text` does not start with one. The value may be
/// infinite ("1e999") or a subnormal ("4.9e-324"): range checks are the caller's.
size_t leading_decimal(std::string_view text, double& value);

/// `text` as a decimal number (leading_decimal taking all of it), or nullopt.
std::optional<double> parse_decimal(std::string_view text);

}  // namespace lorasim::model
