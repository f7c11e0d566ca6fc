// Output files given on the command line (--out, --plot, --save-measurements): an odd target is
// refused before any work with a message that names what is wrong, a device is written in place
// and stays a device, and a measurements file gets a name `lorasim fit` reads back.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/run_lorasim.h"

namespace {

using namespace lorasim::testing;

constexpr int kUsage = 2;  // cli/args.h: bad flag or value

const std::vector<std::string> kSimulate = {"simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16"};

RunResult simulate_plot(const std::string& plot) {
  std::vector<std::string> args = kSimulate;
  args.insert(args.end(), {"--plot", plot});
  return run_lorasim(args);
}

mode_t lmode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode;
}

TEST(OutputPathTest, AFileWhereADirectoryShouldBeIsNamed) {
  TempDir dir;
  std::ofstream(dir / "afile") << "a file\n";
  const std::string path = (dir / "afile" / "x.svg").string();
  const RunResult r = simulate_plot(path);
  EXPECT_EQ(r.exit_code, kUsage) << describe({"--plot", path}, r);
  EXPECT_EQ(r.err, "error: --plot " + path + ": " + (dir / "afile").string() + " is a file, not a directory\n");
}

// Issue 10 item 1: as root, the temporary was renamed over the device node.
TEST(OutputPathTest, ADeviceIsWrittenInPlaceAndStaysADevice) {
  TempDir dir;
  const fs::path null_dev = dir / "null";
  if (::mknod(null_dev.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0)
    GTEST_SKIP() << "cannot create a device node here (needs root)";
  const RunResult r = simulate_plot(null_dev.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(S_ISCHR(lmode(null_dev)));
}

TEST(OutputPathTest, ASymlinkToADeviceIsWrittenThroughAndStaysALink) {
  TempDir dir;
  const fs::path link = dir / "discard.svg";
  fs::create_symlink("/dev/null", link);
  const RunResult r = simulate_plot(link.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(S_ISLNK(lmode(link)));
}

TEST(OutputPathTest, ASymlinkToAFileIsRefusedBeforeAnyWork) {
  TempDir dir;
  std::ofstream(dir / "real.svg") << "real\n";
  const fs::path link = dir / "link.svg";
  fs::create_symlink(dir / "real.svg", link);
  const RunResult r = simulate_plot(link.string());
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_EQ(r.err, "error: --plot " + link.string() +
                       " is a symbolic link: give the path of the file itself (a link is neither followed nor "
                       "replaced)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(dir / "real.svg"), "real\n");
}

// Issue 10 item 6: `calibrate --save-measurements r.txt` calibrated, then wrote a file `fit` refuses.
TEST(OutputPathTest, SaveMeasurementsUnderANameFitCannotReadIsRefusedBeforeCalibrating) {
  if (!fs::exists(fs::path(LORASIM_BIN).parent_path() / "lorasim-train"))
    GTEST_SKIP() << "lorasim-train not built (needs LibTorch)";
  TempDir dir;
  const std::string save = (dir / "r.txt").string();
  const RunResult r = run_lorasim({"calibrate", "--device", "cpu", "--model", "tiny", "--out",
                                   (dir / "cpu.toml").string(), "--save-measurements", save});
  EXPECT_EQ(r.exit_code, kUsage) << r.err;
  EXPECT_EQ(r.err, "error: --save-measurements: measurements are saved as CSV: name the file .csv so `lorasim fit` "
                   "can read it back, not '" + save + "'\n");
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
