// Which profile a device calibrates from: the embedded profile of its GPU model (the closest
// memory size among several), a generic GPU, or the CPU.
#include "hwprofiles/match.h"

#include <gtest/gtest.h>

#include "hwprofiles/builtin.h"

namespace lorasim::hw {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

DeviceIdentity gpu(const std::string& name, int64_t memory_bytes) { return {name, true, memory_bytes}; }

TEST(MatchTest, GpuNamesAsCudaReportsThemFindTheirBuiltin) {
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA H200", 141 * kGiB)), "h200");
  EXPECT_EQ(matching_builtin_name(gpu("Tesla T4", 15 * kGiB)), "t4");
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA H100 80GB HBM3", 80 * kGiB)), "h100-sxm");
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA A10G", 23 * kGiB)), "a10g");
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA L4", 22 * kGiB)), "l4");
}

TEST(MatchTest, ClosestMemoryPicksAmongSizesOfOneModel) {
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA A100-SXM4-40GB", 40 * kGiB)), "a100-40gb");
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA A100-SXM4-80GB", 79 * kGiB)), "a100-80gb");
}

TEST(MatchTest, ModelNamesMatchAsWholeWordsOnly) {
  // "a10" is neither the A10G nor an A100; "L40" is not an L4.
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA A10", 24 * kGiB)), "");
  EXPECT_EQ(matching_builtin_name(gpu("NVIDIA L40S", 48 * kGiB)), "");
  EXPECT_EQ(matching_builtin_name({"NVIDIA H200", false, 141 * kGiB}), "");  // a CPU never matches
}

TEST(MatchTest, MatchedGpuKeepsTheBuiltinFiguresWithItsOwnMemory) {
  const Profile p = base_profile_for(gpu("NVIDIA A100-SXM4-80GB", 81000 * (int64_t{1} << 20)));
  const Profile builtin = builtin_profile("a100-80gb");
  EXPECT_EQ(p.hw.name, "a100-80gb");
  EXPECT_EQ(p.hw.memory_bytes, 81000 * (int64_t{1} << 20));
  EXPECT_EQ(p.hw.peak_bf16_tflops, builtin.hw.peak_bf16_tflops);
  EXPECT_EQ(p.hw.hbm_bandwidth_gbps, builtin.hw.hbm_bandwidth_gbps);
  EXPECT_EQ(p.source_text_name, "builtin:a100-80gb.toml");
}

TEST(MatchTest, UnknownGpuGetsAGenericProfileNamedAfterIt) {
  const Profile p = base_profile_for(gpu("NVIDIA RTX 6000 Ada Generation", 48 * kGiB));
  EXPECT_EQ(p.hw.name, "cuda-gpu");
  EXPECT_EQ(p.hw.display_name, "NVIDIA RTX 6000 Ada Generation");
  EXPECT_EQ(p.hw.memory_bytes, 48 * kGiB);
  EXPECT_EQ(p.origin_source, "lorasim calibrate");
}

TEST(MatchTest, CpuProfileIsSynchronousFp32WithoutAContext) {
  const Profile p = base_profile_for({"AMD EPYC 9654", false, 64 * kGiB});
  EXPECT_EQ(p.hw.name, "cpu");
  EXPECT_EQ(p.hw.display_name, "AMD EPYC 9654");
  EXPECT_EQ(p.hw.memory_bytes, 64 * kGiB);
  EXPECT_FALSE(p.hw.bf16_supported);
  EXPECT_EQ(p.hw.overlap, model::Overlap::sum);
  EXPECT_EQ(p.hw.coefficients_precision, model::Precision::fp32);
  EXPECT_EQ(p.hw.value("context_bytes"), 0);
  EXPECT_EQ(base_profile_for({"", false, kGiB}).hw.display_name, "CPU");
}

TEST(MatchTest, SameDeviceModelComparesGpuModelsLoosely) {
  EXPECT_TRUE(same_device_model(builtin_profile("h200"), gpu("NVIDIA H200", 141 * kGiB)));
  EXPECT_TRUE(same_device_model(builtin_profile("a100-40gb"), gpu("NVIDIA A100-SXM4-80GB", 80 * kGiB)));
  EXPECT_FALSE(same_device_model(builtin_profile("h200"), gpu("Tesla T4", 15 * kGiB)));
  const Profile generic = base_profile_for(gpu("NVIDIA RTX 6000 Ada Generation", 48 * kGiB));
  EXPECT_TRUE(same_device_model(generic, gpu("nvidia rtx 6000 ada generation", 48 * kGiB)));
  EXPECT_TRUE(same_device_model(base_profile_for({"x", false, kGiB}), {"y", false, kGiB}));
  EXPECT_FALSE(same_device_model(builtin_profile("h200"), {"x", false, kGiB}));
}

}  // namespace
}  // namespace lorasim::hw
