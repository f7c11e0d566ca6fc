// Checks that an output file can be written before any long work starts, so a typo in
// --out costs seconds, not a calibration.
#pragma once
#include <string>

namespace lorasim::cli {

/// Throws InputError when `path`'s directory does not exist or is not writable, or `path`
/// is a directory.
void check_writable(const std::string& flag, const std::string& path);

}  // namespace lorasim::cli
