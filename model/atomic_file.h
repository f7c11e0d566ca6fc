// The one way lorasim writes an output file (profiles, saved measurements, plots), so a crash,
// a full disk or a concurrent reader never sees half a file, and an odd target is never
// clobbered by a rename.
//
// What happens per target (lstat of the path itself, not of what a symlink points to):
//  - absent or a regular file: written to a new temporary in the same directory (created with
//    O_EXCL, so it never follows a symlink or reuses an existing file), flushed to disk, renamed
//    over the path, and the directory flushed too. A replaced file keeps its permission bits.
//  - a character device or a FIFO, directly or through a symlink (/dev/null, /dev/stdout, a
//    shell's `>(...)`): written in place, as `>` would; atomicity means nothing for a stream.
//  - anything else is refused: a symlink to a regular file or to nothing (a rename would replace
//    the link, following it would let a planted link redirect the write), a directory, a block
//    device, a socket.
#pragma once
#include <string>

namespace lorasim::model {

/// Why `path` cannot be written as described above ("is a symbolic link: ..."), phrased to follow
/// the path in a message; "" when it can (which does not promise the directory is writable).
std::string unwritable_reason(const std::string& path);

/// True when `path` exists and is written in place (a character device or a FIFO).
bool written_in_place(const std::string& path);

/// Writes `contents` to `path` as described above. `what` names the contents in the error
/// ("profile", "measurements"). Throws ConfigError "cannot write <what> '<path>': <reason>" and
/// leaves no temporary behind.
void write_file_atomically(const std::string& path, const std::string& contents, const std::string& what);

}  // namespace lorasim::model
