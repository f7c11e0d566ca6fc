// resolve_device: device specs and the errors for CUDA asked of a machine without it.
#include "calibrate/device.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace lorasim::calib {
namespace {

TEST(DeviceTest, CpuIsAlwaysAvailable) {
  const DeviceInfo d = resolve_device("cpu");
  EXPECT_EQ(d.spec, "cpu");
  EXPECT_FALSE(d.is_cuda);
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.total_memory_bytes, 0);
  EXPECT_EQ(d.torch_version, torch_version());
}

TEST(DeviceTest, AutoFallsBackToCpuWithoutCuda) {
  const DeviceInfo d = resolve_device("auto");
  if (d.is_cuda) GTEST_SKIP() << "a CUDA device is visible";
  EXPECT_EQ(d.spec, "cpu");
}

TEST(DeviceTest, CudaWithoutCudaThrowsInputError) {
  try {
    const DeviceInfo d = resolve_device("cuda");
    GTEST_SKIP() << "CUDA is present: " << d.name;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("device cuda"), std::string::npos) << msg;
    EXPECT_EQ(e.quantity(), "device");  // the CLI reports it under --device
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
}

TEST(DeviceTest, MalformedSpecThrowsInputError) {
  EXPECT_THROW(resolve_device("gpu"), InputError);
  EXPECT_THROW(resolve_device("cuda:x"), InputError);
  EXPECT_THROW(resolve_device("cuda:"), InputError);
}

}  // namespace
}  // namespace lorasim::calib
