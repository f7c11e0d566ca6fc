#include "model/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "model/error.h"

namespace lorasim::model {
namespace {

enum class Kind { replace, in_place, refused };

struct Target {
  Kind kind = Kind::refused;
  std::string reason;  ///< why it is refused
  bool exists = false;
  mode_t mode = 0;     ///< permission bits of an existing regular file, kept by the replacement
};

bool is_stream(mode_t m) { return S_ISCHR(m) || S_ISFIFO(m); }

Target classify(const std::string& path) {
  if (path.empty() || path.back() == '/') return {Kind::refused, "is not a file name", false, 0};
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    // A missing directory is reported when the temporary cannot be created, with its errno.
    if (errno == ENOENT) return {Kind::replace, "", false, 0};
    return {Kind::refused, std::string("cannot be examined: ") + std::strerror(errno), false, 0};
  }
  if (S_ISREG(st.st_mode)) return {Kind::replace, "", true, st.st_mode & 0777};
  if (is_stream(st.st_mode)) return {Kind::in_place, "", true, 0};
  if (S_ISLNK(st.st_mode)) {
    struct stat to {};
    if (::stat(path.c_str(), &to) == 0 && is_stream(to.st_mode)) return {Kind::in_place, "", true, 0};
    return {Kind::refused, "is a symbolic link: give the path of the file itself (a link is neither followed nor replaced)",
            true, 0};
  }
  if (S_ISDIR(st.st_mode)) return {Kind::refused, "is a directory: give a file name", true, 0};
  return {Kind::refused, "is not a regular file, a character device or a FIFO: give a file name", true, 0};
}

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& reason) {
  throw ConfigError("cannot write " + what + " '" + path + "': " + reason);
}

std::string errno_text(const std::string& step, int err) { return step + ": " + std::strerror(err); }

/// Writes all of `text`, retrying short writes and EINTR. Returns 0 or the errno.
int write_all(int fd, const std::string& text) {
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

void write_in_place(const std::string& path, const std::string& contents, const std::string& what) {
  // No O_CREAT and no O_TRUNC: the target exists and is a stream, and stays what it is.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(what, path, errno_text("open failed", errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !is_stream(st.st_mode)) {
    ::close(fd);  // replaced by something else since it was examined
    fail(what, path, "changed while it was being opened: try again");
  }
  const int err = write_all(fd, contents);
  const int closed = ::close(fd);
  if (err != 0) fail(what, path, errno_text("write failed", err));
  if (closed != 0) fail(what, path, errno_text("close failed", errno));
}

void replace(const std::string& path, const std::string& contents, const std::string& what, const Target& target) {
  // Same directory as the target, so rename() is atomic (no cross-filesystem copy). O_EXCL never
  // follows a symlink and never opens an existing file, so a link or a file planted at the
  // temporary's name is left alone; the counter moves on to a fresh name instead. Mode 0666 lets
  // the umask decide a new file's permissions, as for any newly created file.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail(what, path, errno_text("cannot create a temporary file next to it", errno));

  auto abandon = [&](const std::string& step, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    fail(what, path, errno_text(step, err));
  };
  if (target.exists && ::fchmod(fd, target.mode) != 0) abandon("cannot keep its permissions", errno);
  if (const int err = write_all(fd, contents); err != 0) abandon("write failed", err);
  // Data must be on disk before the rename makes it visible, or a crash could leave an empty
  // file under the real name.
  if (::fsync(fd) != 0) abandon("fsync failed", errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) abandon("close failed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("rename failed", errno);

  // Best effort: persist the directory entry too. Failure here loses nothing already written.
  std::string dir = ".";
  if (auto slash = path.find_last_of('/'); slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

std::string unwritable_reason(const std::string& path) {
  const Target t = classify(path);
  return t.kind == Kind::refused ? t.reason : "";
}

bool written_in_place(const std::string& path) { return classify(path).kind == Kind::in_place; }

void write_file_atomically(const std::string& path, const std::string& contents, const std::string& what) {
  const Target target = classify(path);
  switch (target.kind) {
    case Kind::refused:
      fail(what, path, target.reason);
    case Kind::in_place:
      return write_in_place(path, contents, what);
    case Kind::replace:
      return replace(path, contents, what, target);
  }
}

}  // namespace lorasim::model
