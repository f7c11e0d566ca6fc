// The SHA-256 of a file's bytes, in hex: a measurement row names the model config it ran by
// this hash (docs/measurements.md), so a config file that changed after the run is caught.
#pragma once
#include <string>

namespace lorasim::calib {

/// The SHA-256 of `bytes` as 64 lowercase hex digits (FIPS 180-4).
std::string sha256_hex(const std::string& bytes);

}  // namespace lorasim::calib
