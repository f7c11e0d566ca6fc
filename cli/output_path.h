// Checks that an output file can be written before any long work starts, so a typo in
// --out costs seconds, not a calibration.
#pragma once
#include <string>

namespace lorasim::cli {

/// Throws InputError, naming `flag`, when model::write_file_atomically would refuse `path` (a
/// directory, a symlink to a regular file, ...), its directory is missing, is not a directory or
/// is not writable, or the file exists and is not writable. A device or FIFO written in place
/// (/dev/null, /dev/stdout) needs only to be writable itself.
void check_writable(const std::string& flag, const std::string& path);

/// check_writable, and the name must be one `lorasim fit` reads back as saved (.csv).
void check_measurements_writable(const std::string& flag, const std::string& path);

}  // namespace lorasim::cli
