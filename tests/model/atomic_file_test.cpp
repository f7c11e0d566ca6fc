// write_file_atomically: a regular file is replaced whole or not at all; a device or a FIFO is
// written in place and stays what it is; a symlink, a directory or a block device is refused;
// nothing planted next to the target is followed or destroyed.
#include "model/atomic_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"

namespace lorasim::model {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::path(::testing::TempDir()) / "lorasim-atomic-XXXXXX").string();
    if (::mkdtemp(p.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

mode_t lmode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

/// The error message of `write_file_atomically(path, ...)`, or "" when it succeeded.
std::string write_error(const std::string& path, const std::string& contents = "new\n") {
  try {
    write_file_atomically(path, contents, "profile");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(AtomicFileTest, CreatesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  write_file_atomically(dir / "out.toml", "a = 1\n", "profile");
  EXPECT_EQ(read(dir / "out.toml"), "a = 1\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.toml"});
}

TEST(AtomicFileTest, ReplacesARegularFileAndKeepsItsPermissions) {
  TempDir dir;
  std::ofstream(dir / "out.toml") << "old contents, longer than the new\n";
  ::chmod((dir / "out.toml").c_str(), 0640);
  write_file_atomically(dir / "out.toml", "new\n", "profile");
  EXPECT_EQ(read(dir / "out.toml"), "new\n");
  EXPECT_EQ(lmode(dir / "out.toml") & 0777, 0640u);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.toml"});
}

// Issue 10 item 1: as root, `--out /dev/null` replaced the device with a regular file.
TEST(AtomicFileTest, WritesACharacterDeviceInPlace) {
  TempDir dir;
  const std::string null_dev = dir / "null";
  if (::mknod(null_dev.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0)
    GTEST_SKIP() << "cannot create a device node here (needs root)";
  EXPECT_EQ(write_error(null_dev), "");
  EXPECT_TRUE(S_ISCHR(lmode(null_dev)));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"null"});
}

TEST(AtomicFileTest, WritesThroughASymlinkToADeviceInPlace) {
  TempDir dir;
  const std::string link = dir / "discard";  // like /dev/stdout, a link to a character device
  fs::create_symlink("/dev/null", link);
  EXPECT_EQ(write_error(link), "");
  EXPECT_TRUE(S_ISLNK(lmode(link)));
  EXPECT_TRUE(S_ISCHR(lmode("/dev/null")));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"discard"});
}

TEST(AtomicFileTest, WritesAFifoInPlace) {
  TempDir dir;
  const std::string fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The read end is open before the write, so the writer neither blocks nor can hang the test,
  // and the message fits in the pipe's buffer.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(write_error(fifo, "through the pipe\n"), "");
  char buf[64] = {};
  const ssize_t n = ::read(reader, buf, sizeof buf);
  ::close(reader);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "through the pipe\n");
  EXPECT_TRUE(S_ISFIFO(lmode(fifo)));
}

TEST(AtomicFileTest, RefusesASymlinkToARegularFileAndChangesNeither) {
  TempDir dir;
  std::ofstream(dir / "real.toml") << "real\n";
  fs::create_symlink(dir / "real.toml", dir / "link.toml");
  const std::string error = write_error(dir / "link.toml");
  EXPECT_EQ(error, "cannot write profile '" + (dir / "link.toml") +
                       "': is a symbolic link: give the path of the file itself (a link is neither followed nor "
                       "replaced)");
  EXPECT_TRUE(S_ISLNK(lmode(dir / "link.toml")));
  EXPECT_EQ(read(dir / "real.toml"), "real\n");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"link.toml", "real.toml"}));
}

TEST(AtomicFileTest, RefusesADanglingSymlink) {
  TempDir dir;
  fs::create_symlink(dir / "elsewhere", dir / "link.toml");
  EXPECT_NE(write_error(dir / "link.toml").find("is a symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"link.toml"});
}

TEST(AtomicFileTest, RefusesADirectoryAndABlockDevice) {
  TempDir dir;
  fs::create_directory(dir / "sub");
  EXPECT_EQ(write_error(dir / "sub"), "cannot write profile '" + (dir / "sub") + "': is a directory: give a file name");
  EXPECT_EQ(unwritable_reason(dir / "sub"), "is a directory: give a file name");
  const std::string block = dir / "disk";
  if (::mknod(block.c_str(), S_IFBLK | 0600, ::makedev(7, 0)) != 0)
    GTEST_SKIP() << "cannot create a device node here (needs root)";
  EXPECT_NE(write_error(block).find("is not a regular file, a character device or a FIFO"), std::string::npos);
  EXPECT_TRUE(S_ISBLK(lmode(block)));
}

// Issue 10 item 2: a fixed temporary name followed a symlink there and destroyed a file of that
// name. Links and files are planted at the old fixed name and at this process's next names.
TEST(AtomicFileTest, NeverFollowsOrReplacesWhatIsAtTheTemporaryNames) {
  TempDir dir;
  std::ofstream(dir / "victim") << "victim\n";
  const std::string target = dir / "runs.csv";
  fs::create_symlink(dir / "victim", target + ".tmp");
  for (int i = 0; i < 64; ++i) {
    const std::string name = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(i);
    if (i % 2) fs::create_symlink(dir / "victim", name);
    else std::ofstream(name) << "planted\n";
  }
  const size_t planted = dir.entries().size();
  write_file_atomically(target, "rows\n", "measurements");
  EXPECT_EQ(read(target), "rows\n");
  EXPECT_EQ(read(dir / "victim"), "victim\n");
  EXPECT_EQ(dir.entries().size(), planted + 1);
  EXPECT_TRUE(S_ISLNK(lmode(target + ".tmp")));
  EXPECT_EQ(read(target + ".tmp." + std::to_string(::getpid()) + ".0"), "planted\n");
}

TEST(AtomicFileTest, AMissingOrNonDirectoryParentThrowsAndCreatesNothing) {
  TempDir dir;
  EXPECT_NE(write_error(dir / "absent/x.toml").find("cannot create a temporary file next to it"), std::string::npos);
  std::ofstream(dir / "afile") << "a file\n";
  EXPECT_EQ(write_error(dir / "afile/x.toml"),
            "cannot write profile '" + (dir / "afile/x.toml") + "': cannot be examined: Not a directory");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"afile"});
}

TEST(AtomicFileTest, AFailedWriteRemovesTheTemporaryAndKeepsTheOldFile) {
  TempDir dir;
  std::ofstream(dir / "out.toml") << "old\n";
  // A file size limit makes write() fail with EFBIG (SIGXFSZ ignored) halfway through.
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string error = write_error(dir / "out.toml", std::string(4096, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find("write failed: File too large"), std::string::npos) << error;
  EXPECT_EQ(read(dir / "out.toml"), "old\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.toml"});
}

TEST(AtomicFileTest, AnEmptyNameOrATrailingSlashIsNotAFileName) {
  EXPECT_EQ(unwritable_reason(""), "is not a file name");
  EXPECT_EQ(unwritable_reason("somewhere/"), "is not a file name");
  EXPECT_EQ(unwritable_reason("/nonexistent-dir-lorasim/x"), "");
  EXPECT_FALSE(written_in_place("/nonexistent-dir-lorasim/x"));
  EXPECT_TRUE(written_in_place("/dev/null"));
}

}  // namespace
}  // namespace lorasim::model
