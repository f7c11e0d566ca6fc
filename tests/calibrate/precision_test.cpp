// The precision policy: one function decides what every training run uses.
#include "calibrate/precision.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace lorasim::calib {
namespace {

using model::Precision;

DeviceInfo gpu(const std::string& name, bool bf16) {
  DeviceInfo d;
  d.spec = "cuda:0";
  d.is_cuda = true;
  d.name = name;
  d.bf16_supported = bf16;
  return d;
}

DeviceInfo cpu() {
  DeviceInfo d;
  d.spec = "cpu";
  d.name = "some CPU";
  return d;
}

TEST(PrecisionTest, AutoIsBf16OnAGpuWithBf16) {
  const PrecisionChoice c = resolve_precision("auto", gpu("NVIDIA H200", true));
  EXPECT_EQ(c.precision, Precision::bf16);
  EXPECT_EQ(c.note, "");
}

TEST(PrecisionTest, AutoIsFp16OnAGpuWithoutBf16) {
  const PrecisionChoice c = resolve_precision("auto", gpu("Tesla T4", false));
  EXPECT_EQ(c.precision, Precision::fp16);
  EXPECT_EQ(c.note, "");
}

TEST(PrecisionTest, ExplicitRequestsAreKeptOnCudaWithANoteForEmulatedBf16) {
  EXPECT_EQ(resolve_precision("fp16", gpu("NVIDIA H200", true)).precision, Precision::fp16);
  EXPECT_EQ(resolve_precision("fp32", gpu("NVIDIA H200", true)).precision, Precision::fp32);
  EXPECT_EQ(resolve_precision("bf16", gpu("NVIDIA H200", true)).note, "");
  const PrecisionChoice t4 = resolve_precision("bf16", gpu("Tesla T4", false));
  EXPECT_EQ(t4.precision, Precision::bf16);
  EXPECT_NE(t4.note.find("Tesla T4"), std::string::npos) << t4.note;
}

TEST(PrecisionTest, TheCpuTrainsInFp32WhateverIsAsked) {
  for (const char* asked : {"auto", "bf16", "fp16", "fp32"})
    EXPECT_EQ(resolve_precision(asked, cpu()).precision, Precision::fp32) << asked;
  EXPECT_EQ(resolve_precision("auto", cpu()).note, "");
  EXPECT_EQ(resolve_precision("fp32", cpu()).note, "");
  EXPECT_EQ(resolve_precision(Precision::bf16, cpu()).note, "the CPU trains in fp32, not bf16");
}

TEST(PrecisionTest, UnknownNameIsAnInputError) {
  EXPECT_THROW(resolve_precision("fp8", cpu()), InputError);
}

}  // namespace
}  // namespace lorasim::calib
