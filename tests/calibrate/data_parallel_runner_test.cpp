// The runner data-parallel over c10d's Gloo: two processes (ddp_rank_worker) end a step with
// the same adapter weights, bit for bit, and with the loss and weights of one process that
// trains the whole batch (within float reduction order).
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct RankOutput {
  double loss = 0;
  int processes = 0;
  std::vector<float> weights, gradients;
};

RankOutput read_output(const fs::path& p) {
  RankOutput o;
  std::ifstream in(p);
  size_t weights = 0;
  in >> o.loss >> o.processes >> weights;
  float v = 0;
  while (in >> v) (o.weights.size() < weights ? o.weights : o.gradients).push_back(v);
  return o;
}

// Largest difference within `rel` of the largest magnitude of `want`, which must not be all zero.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
    max_abs = std::max(max_abs, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_GT(max_abs, 0.0) << what << " are all zero: the comparison would prove nothing";
  EXPECT_LE(max_diff, rel * max_abs) << what << ": largest difference " << max_diff << " of " << max_abs;
}

pid_t start(const std::vector<std::string>& args) {
  std::vector<std::string> a = {LORASIM_DDP_WORKER};
  a.insert(a.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string t = (fs::path(::testing::TempDir()) / "lorasim-ddp-XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~Scratch() { fs::remove_all(dir); }
};

TEST(DataParallelRunnerTest, TwoGlooRanksMatchEachOtherAndOneProcessWithTheWholeBatch) {
  setenv("OMP_NUM_THREADS", "1", 1);  // two ranks on the machine's cores
  Scratch s;
  const std::string store = (s.dir / "store").string();
  // Two ranks of 2 x 2 against one process of 4 x 2: the same 8 sequences per step.
  const pid_t r0 = start({"0", "2", store, "2", "2", (s.dir / "rank0").string()});
  const pid_t r1 = start({"1", "2", store, "2", "2", (s.dir / "rank1").string()});
  const pid_t one = start({"0", "1", (s.dir / "unused").string(), "4", "2", (s.dir / "single").string()});
  ASSERT_EQ(wait_for(r0), 0);
  ASSERT_EQ(wait_for(r1), 0);
  ASSERT_EQ(wait_for(one), 0);
  const RankOutput a = read_output(s.dir / "rank0"), b = read_output(s.dir / "rank1"),
                   whole = read_output(s.dir / "single");
  EXPECT_EQ(a.processes, 2);
  EXPECT_EQ(whole.processes, 1);
  ASSERT_FALSE(a.weights.empty());
  ASSERT_EQ(a.weights.size(), b.weights.size());
  ASSERT_EQ(a.weights.size(), whole.weights.size());
  // Bit for bit: both ranks apply the same all-reduced gradients to the same weights.
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.gradients, b.gradients);
  // One process of the whole batch: the same loss and the same averaged gradients (float
  // summation order apart); the weights within what AdamW's first step makes of that order --
  // about lr x sign(gradient), so a gradient near zero may move its weight by up to lr (1e-2).
  EXPECT_NEAR(a.loss, whole.loss, 1e-6 * std::abs(whole.loss));
  expect_close(a.gradients, whole.gradients, 1e-5, "gradients");
  expect_close(a.weights, whole.weights, 1e-3, "weights");
}

TEST(DataParallelRunnerTest, ARankOutsideTheWorldIsRefused) {
  Scratch s;
  const pid_t bad = start({"2", "2", (s.dir / "store").string(), "1", "1", (s.dir / "out").string()});
  EXPECT_EQ(wait_for(bad), 1);
  EXPECT_FALSE(fs::exists(s.dir / "out"));
}

}  // namespace
