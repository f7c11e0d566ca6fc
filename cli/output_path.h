// Checks that output files can be written before any long work starts, so a typo in --out
// costs seconds, not a calibration, and that no output lands on an input or on another output.
#pragma once
#include <string>
#include <vector>

namespace lorasim::cli {

/// Throws InputError, naming `flag`, when model::write_file_atomically would refuse `path` (a
/// directory, a symlink to a regular file, ...), its directory is missing, is not a directory or
/// is not writable, or the file exists and is not writable. A device or FIFO written in place
/// (/dev/null, /dev/stdout) needs only to be writable itself.
void check_writable(const std::string& flag, const std::string& path);

/// check_writable, and the name must be one `lorasim fit` reads back as saved (.csv).
void check_measurements_writable(const std::string& flag, const std::string& path);

/// A file a command reads or writes, with the flag that named it; an empty path is skipped.
struct FileArg {
  std::string flag;       ///< "--out"
  std::string path;
  std::string extension;  ///< outputs: the name's required ending (".toml", ".svg", ".csv")
};

/// Before anything runs: no output is an input or another output -- the same file, also through
/// a symbolic or hard link (same device and inode where it exists, the same canonical path where
/// not) -- then each output is writable (check_writable) and named for what is written into it
/// (a device or FIFO written in place keeps any name). Throws InputError naming the flags.
void check_outputs(const std::vector<FileArg>& outputs, const std::vector<FileArg>& inputs = {});

/// Throws InputError when two of `inputs` are one file (as check_outputs tells them): a file of
/// runs given twice would count each run twice.
void check_distinct_inputs(const std::vector<FileArg>& inputs);

}  // namespace lorasim::cli
