// A run's preconditions without training: the memory it must hold at least, what the machine
// has available, and the one-line reasons a run or a model is refused.
#include "calibrate/run_checks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

model::Workload tiny(int64_t seq_len) {
  model::Workload w;
  w.arch = model::preset("tiny");
  w.train.seq_len = seq_len;
  w.train.precision = model::Precision::fp32;
  return w;
}

DeviceInfo gpu(int64_t memory_bytes) {
  DeviceInfo d;
  d.spec = "cuda:0";
  d.is_cuda = true;
  d.total_memory_bytes = memory_bytes;
  return d;
}

std::string meminfo_file(const std::string& text) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "run_checks_meminfo").string();
  std::ofstream(path) << text;
  return path;
}

TEST(RunChecksTest, LeastMemoryIsTheStaticBytesOneMicroBatchAndEveryTokenId) {
  const model::Workload w = tiny(64);
  const RunMemory m = least_run_memory(w, 2, 3);
  EXPECT_EQ(m.static_bytes, static_cast<double>(model::static_memory(w).total()));
  const model::ActivationMemory act = model::activation_memory(w, 2);
  EXPECT_EQ(m.activation_bytes, act.saved_bytes + act.logits_buffer_bytes);
  EXPECT_EQ(m.token_bytes, 8.0 * 2 * 3 * 64);
  EXPECT_EQ(m.host_bytes(false, 3), m.device_bytes());
  EXPECT_EQ(m.host_bytes(true, 3), 2 * 8.0 * 2 * 64);  // one micro-batch's ids, vector and tensor
}

TEST(RunChecksTest, AvailableHostMemoryIsMemAvailable) {
  EXPECT_EQ(available_host_bytes(meminfo_file("MemTotal:       32000000 kB\nMemFree:         1000 kB\n"
                                              "MemAvailable:   20000000 kB\nBuffers: 1 kB\n")),
            int64_t{20000000} * 1024);
  EXPECT_EQ(available_host_bytes(meminfo_file("MemTotal: 32000000 kB\n")), -1);  // old kernels lack it
  EXPECT_EQ(available_host_bytes("/nonexistent/meminfo"), -1);
  EXPECT_GT(available_host_bytes(), 0);  // this machine's
}

TEST(RunChecksTest, HostShortfallNamesTheSplitTheNeedAndWhatIsAvailable) {
  DeviceInfo cpu;
  cpu.spec = "cpu";
  EXPECT_EQ(run_memory_shortfall(tiny(64), 4, 1, cpu, int64_t{1} << 30), "");
  EXPECT_EQ(run_memory_shortfall(tiny(64), 4, 1, cpu, -1), "");  // unknown: not checked
  const std::string why = run_memory_shortfall(tiny(64), 1024, 1024, cpu, int64_t{1} << 30);
  EXPECT_EQ(why.rfind("not run: micro-batch 1024 x accumulation 1024 at sequence length 64 needs at least ", 0), 0u)
      << why;
  EXPECT_NE(why.find("the step's token ids 512 MiB), and the machine has 1 GiB available"), std::string::npos) << why;
}

TEST(RunChecksTest, OnCudaTheDeviceHoldsTheStepAndTheHostOneMicroBatch) {
  const int64_t gib = int64_t{1} << 30;
  // 512 MiB of ids on the device, 1 MiB on the host: the host's 64 MiB suffice, the GPU's 256 MiB do not.
  const std::string why = run_memory_shortfall(tiny(64), 1024, 1024, gpu(gib / 4), gib / 16);
  EXPECT_EQ(why.rfind("not run: micro-batch 1024 x accumulation 1024 at sequence length 64 needs at least ", 0), 0u)
      << why;
  EXPECT_NE(why.find(" of device memory ("), std::string::npos) << why;
  const std::string tail = "), and cuda:0 has 256 MiB";
  EXPECT_EQ(why.substr(why.size() - tail.size()), tail) << why;
  EXPECT_EQ(run_memory_shortfall(tiny(64), 1024, 1024, gpu(80 * gib), gib / 16), "");
}

TEST(RunChecksTest, ModelShortfallNamesTheModelAndItsPrecision) {
  EXPECT_EQ(model_memory_shortfall(tiny(64), gpu(int64_t{1} << 30), -1), "");
  const std::string why = model_memory_shortfall(tiny(64), gpu(1000), -1);
  EXPECT_EQ(why.rfind("the model 'tiny' needs at least ", 0), 0u) << why;
  EXPECT_NE(why.find(" for its weights, adapters and optimizer state in fp32, and cuda:0 has 1000 B"),
            std::string::npos) << why;
}

TEST(RunChecksTest, CountsOutOfBoundsAreInputErrors) {
  EXPECT_NO_THROW(check_run_counts(kMaxRunMicroBatch, kMaxRunAccumulation, 64));
  EXPECT_THROW(check_run_counts(0, 1, 64), InputError);
  EXPECT_THROW(check_run_counts(1, 0, 64), InputError);
  EXPECT_THROW(check_run_counts(kMaxRunMicroBatch + 1, 1, 64), InputError);
  EXPECT_THROW(check_run_counts(1, kMaxRunAccumulation + 1, 64), InputError);
  try {
    check_run_counts(kMaxRunMicroBatch, kMaxRunAccumulation, int64_t{1} << 30);
    FAIL() << "2^70 tokens accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "the tokens of one step (micro-batch 1048576 x accumulation 1048576 at sequence length "
                           "1073741824) do not fit in a 64-bit count");
  }
}

}  // namespace
}  // namespace lorasim::calib
