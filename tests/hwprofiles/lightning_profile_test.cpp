// The lightning stack in a profile: it reads hf-peft's values until the profile holds its own
// loop terms ([stack.lightning]), which the writer writes only then.
#include <gtest/gtest.h>

#include <string>

#include "hwprofiles/builtin.h"
#include "hwprofiles/profile.h"
#include "model/coefficients.h"
#include "model/hardware.h"
#include "model/stack.h"
#include "model/training_stack.h"

namespace lorasim::hw {
namespace {

const model::StackKind kPl = model::parse_stack("lightning");
constexpr model::StackKind kHf = model::StackKind::hf_peft;

TEST(LightningProfileTest, ReadsHfPeftsValuesWithoutASectionOfItsOwn) {
  const model::HardwareModel hw = builtin_profile("h200").hw;
  ASSERT_TRUE(hw.origin(kHf).calibrated);
  ASSERT_FALSE(hw.origin(kPl).has_values);
  for (const model::Coefficient& c : model::coefficient_table()) {
    if (c.field) {
      EXPECT_EQ(hw.value(c, kPl), hw.value(c, kHf)) << c.name;
    }
  }
  // hf-peft's calibrated host term, not the table's prior.
  EXPECT_NE(hw.value("host_fixed_s", kPl), model::find_coefficient("host_fixed_s")->in(kPl).prior);
  EXPECT_EQ(to_toml(builtin_profile("h200")).find("[stack.lightning]"), std::string::npos);
}

// The embedded H100 carries Lightning's measured device scales and nothing else of its own: the
// host terms are hf-peft's, and the stack is not called calibrated there.
TEST(LightningProfileTest, TheEmbeddedH100HasLightningsDeviceScalesAndHfPeftsHost) {
  const model::HardwareModel hw = builtin_profile("h100-sxm").hw;
  ASSERT_TRUE(hw.origin(kPl).has_values);
  EXPECT_FALSE(hw.origin(kPl).calibrated);
  EXPECT_LT(hw.value("device_scale", kPl), hw.value("device_scale", kHf));
  for (const char* row :
       {"host_fixed_s", "host_per_op_s", "optimizer_fixed_s", "optimizer_per_tensor_s", "saved_scale"})
    EXPECT_EQ(hw.value(row, kPl), hw.value(row, kHf)) << row;
}

// Those host terms follow hf-peft's, not a copy taken when the profile was read: a calibration of
// hf-peft on the user's machine (from the embedded H100) reaches Lightning's predictions, in
// memory and through the file it writes.
TEST(LightningProfileTest, InheritedRowsFollowACalibrationOfTheBase) {
  Profile p = builtin_profile("h100-sxm");
  p.hw.value("host_per_op_s", kHf) = 4.2e-5;  // as `lorasim calibrate --stack hf-peft` stores it
  const model::HardwareModel& hw = p.hw;       // what predictions read (model::resolve)
  EXPECT_EQ(hw.value("host_per_op_s", kPl), 4.2e-5);
  const std::string text = to_toml(p);
  const std::string section = text.substr(text.find("[stack.lightning]"));
  EXPECT_EQ(section.find("\nhost_per_op_s = "), std::string::npos) << section;
  EXPECT_NE(section.find("\ndevice_scale = "), std::string::npos) << section;
  const Profile back = parse_profile(text, "test.toml");
  EXPECT_EQ(back.hw.value("host_per_op_s", kPl), 4.2e-5);
  EXPECT_EQ(back.hw.value("device_scale", kPl), hw.value("device_scale", kPl));
}

TEST(LightningProfileTest, ItsOwnSectionSetsTheLoopsTermsAndRoundTrips) {
  Profile p = builtin_profile("h100-sxm");
  p.hw.value("host_fixed_s", kPl) = 4.0e-3;
  p.hw.value("host_per_op_s", kPl) = 3.0e-5;
  p.hw.value("optimizer_fixed_s", kPl) = 1.0e-3;
  p.hw.value("optimizer_per_tensor_s", kPl) = 2.0e-5;
  p.hw.value("device_scale", kPl) = 0.98;
  p.hw.value("head_device_scale", kPl) = 0.66;
  p.hw.origin(kPl) = {true, "lorasim calibrate --stack lightning, test", true, {}};
  const std::string text = to_toml(p);
  ASSERT_NE(text.find("[stack.lightning]"), std::string::npos);
  const Profile back = parse_profile(text, "test.toml");
  EXPECT_TRUE(back.hw.origin(kPl).calibrated);
  EXPECT_EQ(back.hw.value("host_fixed_s", kPl), 4.0e-3);
  EXPECT_EQ(back.hw.value("optimizer_per_tensor_s", kPl), 2.0e-5);
  EXPECT_EQ(back.hw.value("device_scale", kPl), 0.98);
  EXPECT_EQ(back.hw.value("head_device_scale", kPl), 0.66);
  // Everything else is still hf-peft's: the model code's memory and new shapes.
  for (const char* row : {"saved_scale", "reserved_logits_share", "worst_case_margin", "new_shape_s"})
    EXPECT_EQ(back.hw.value(row, kPl), back.hw.value(row, kHf)) << row;
  EXPECT_NE(back.hw.value("host_fixed_s", kPl), back.hw.value("host_fixed_s", kHf));
}

// A section written before lightning owned the device scales has none: it reads hf-peft's values
// of the same profile there, as without a section, not the table's prior.
TEST(LightningProfileTest, ASectionWithoutTheDeviceScalesReadsHfPeftsValues) {
  Profile p = builtin_profile("h100-sxm");
  p.hw.value("host_per_op_s", kPl) = 3.0e-5;
  p.hw.origin(kPl) = {true, "lorasim calibrate --stack lightning, test", true, {}};
  std::string text = to_toml(p);
  const size_t section = text.find("[stack.lightning]");
  ASSERT_NE(section, std::string::npos);
  for (const char* key : {"\nhead_device_scale = ", "\ndevice_scale = "}) {
    const size_t at = text.find(key, section);
    ASSERT_NE(at, std::string::npos) << key;
    text.erase(at, text.find('\n', at + 1) - at);
  }
  const Profile back = parse_profile(text, "test.toml");
  EXPECT_EQ(back.hw.value("host_per_op_s", kPl), 3.0e-5);
  for (const char* row : {"device_scale", "head_device_scale"}) {
    EXPECT_EQ(back.hw.value(row, kPl), back.hw.value(row, kHf)) << row;
    EXPECT_NE(back.hw.value(row, kPl), model::find_coefficient(row)->in(kPl).prior) << row;
  }
}

}  // namespace
}  // namespace lorasim::hw
