// The [stack.hf-peft] table of a profile: read, range-checked, written and compared exactly.
#include <gtest/gtest.h>

#include <string>

#include "hwprofiles/builtin.h"
#include "hwprofiles/profile.h"
#include "model/error.h"
#include "model/coefficients.h"
#include "tests/hwprofiles/builtin_text.h"

namespace lorasim::hw {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_profile(text, "test.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr model::StackKind kHf = model::StackKind::hf_peft;
// A datasheet prior without a [stack.hf-peft] table, the base the tests add one to (the embedded
// h100-sxm is calibrated and has its own).
constexpr const char* kPriorBase = "a100-80gb";

// Every number of [stack.hf-peft]: the table's values the stack stores itself.
std::vector<const model::StoredValue*> stack_values() {
  std::vector<const model::StoredValue*> v;
  for (const model::StoredValue& s : model::stored_values())
    if (std::string(s.entry().section) == "stack.hf-peft") v.push_back(&s);
  return v;
}
double prior(const char* name) { return model::find_coefficient(name)->in(kHf).prior; }

// Values with no short decimal form, so that an inexact writer shows.
Profile with_fitted_stack() {
  Profile p = parse_profile(builtin_text(kPriorBase), "test.toml");
  struct {
    model::HardwareModel& hw;
    double& get(const char* n) { return hw.value(n, kHf); }
  } t{p.hw};
  t.get("host_fixed_s") = 1.0 / 3.0 * 1e-3;
  t.get("host_per_op_s") = 8.123456789012345e-05;
  t.get("recompute_host_share") = 2.0 / 7.0;
  t.get("device_scale") = 1.1234567890123457;
  t.get("head_device_scale") = 1.0 / 0.7;
  t.get("optimizer_fixed_s") = 4.4e-3;
  t.get("optimizer_per_tensor_s") = 3.3e-5;
  t.get("saved_scale") = 0.9876543210987654;
  t.get("logits_scale") = 1.0000000000000002;
  t.get("workspace_bytes") = 123456789.5;
  t.get("fused_head_s_per_token") = 3.0e-7 / 7.0;  // its prior is 0: a fitted value must round-trip too
  t.get("host_per_quant_call_s") = 1.1e-4 / 3.0;   // likewise
  t.get("dequant_s_per_weight_byte") = 2.3e-12 / 7.0;
  t.get("reserved_overhead_bytes") = 6.02e8;
  t.get("reserved_activation_share") = 0.07;
  t.get("reserved_logits_share") = 0.3;
  t.get("reserved_quant_fused_share") = 0.4 / 3.0;  // its prior is 0: a fitted value must round-trip too
  t.get("expected_time_error") = 0.05;
  t.get("expected_memory_error") = 0.03;
  t.get("host_spread") = 0.2345678901234567;
  t.get("device_spread") = 1.0 / 11.0;
  t.get("worst_case_margin") = 0.1 / 3.0;
  t.get("worst_case_bytes") = 268435456.0 / 3.0;
  p.hw.origin(kHf).calibrated = true;
  p.hw.origin(kHf).source = "lorasim calibrate --stack hf-peft, 2025-01-01";
  return p;
}

const char kStackTable[] =
    "\n[stack.hf-peft]\ncalibrated = false\nsource = \"hand\"\nhost_per_op_s = 1e-4\n";

}  // namespace

TEST(ProfileStackTest, FittedStackTermsRoundTripExactly) {
  const Profile p = with_fitted_stack();
  const std::string text = to_toml(p);
  EXPECT_TRUE(contains(text, "[stack.hf-peft]")) << text;
  const Profile back = parse_profile(text, "test.toml");
  EXPECT_EQ(back, p);
  for (const model::StoredValue* v : stack_values())
    EXPECT_EQ(back.hw.value(*v->row, kHf), p.hw.value(*v->row, kHf)) << v->row->name;
  EXPECT_EQ(back.hw.origin(model::StackKind::hf_peft).source, p.hw.origin(model::StackKind::hf_peft).source);
  EXPECT_EQ(to_toml(back), text);
}

TEST(ProfileStackTest, EqualityComparesEveryStackTerm) {
  const Profile p = with_fitted_stack();
  for (const model::StoredValue* v : stack_values()) {
    Profile q = p;
    double& x = q.hw.value(*v->row, kHf);
    x = x * 1.5 + 0.25;  // a term that is 0 changes too
    EXPECT_NE(q, p) << v->row->name;
  }
  Profile q = p;
  q.hw.origin(model::StackKind::hf_peft).calibrated = false;
  EXPECT_NE(q, p);
  q = p;
  q.hw.origin(model::StackKind::hf_peft).source = "other";
  EXPECT_NE(q, p);
}

TEST(ProfileStackTest, HandWrittenUncalibratedTableRoundTrips) {
  // A table a user wrote (not calibrated, their own source) is kept on write.
  const Profile p = parse_profile(builtin_text(kPriorBase) + kStackTable, "test.toml");
  EXPECT_EQ(p.hw.value("host_per_op_s", model::StackKind::hf_peft), 1e-4);
  EXPECT_FALSE(p.hw.origin(model::StackKind::hf_peft).calibrated);
  EXPECT_EQ(parse_profile(to_toml(p), "test.toml"), p);
}

TEST(ProfileStackTest, ChangedTermsWithThePriorsSourceStillRoundTrip) {
  // parse_profile(to_toml(p)) == p is profile.h's promise for every p; a table whose numbers
  // differ from the priors but whose provenance was left at its defaults must not be dropped.
  Profile p = parse_profile(builtin_text(kPriorBase), "test.toml");
  p.hw.value("host_per_op_s", model::StackKind::hf_peft) = 1e-4;
  ASSERT_FALSE(p.hw.origin(model::StackKind::hf_peft).calibrated);
  ASSERT_EQ(p.hw.origin(model::StackKind::hf_peft).source, model::StackOrigin{}.source);
  EXPECT_EQ(parse_profile(to_toml(p), "test.toml"), p) << to_toml(p);
}

TEST(ProfileStackTest, ProfileWithoutTheTableReadsThePriorsAndWritesNoTable) {
  const Profile p = parse_profile(builtin_text(kPriorBase), "test.toml");
  const model::StackOrigin defaults;
  for (const model::StoredValue* v : stack_values())
    EXPECT_EQ(p.hw.value(*v->row, kHf), v->entry().prior) << v->row->name;
  EXPECT_FALSE(p.hw.origin(model::StackKind::hf_peft).calibrated);
  EXPECT_EQ(p.hw.origin(model::StackKind::hf_peft).source, defaults.source);
  const std::string text = to_toml(p);
  EXPECT_FALSE(contains(text, "[stack")) << text;
  EXPECT_EQ(parse_profile(text, "test.toml"), p);
}

TEST(ProfileStackTest, PartialTableKeepsThePriorsOfTheKeysItLacks) {
  const Profile p = parse_profile(builtin_text(kPriorBase) + kStackTable, "test.toml");
  EXPECT_EQ(p.hw.value("device_scale", model::StackKind::hf_peft), prior("device_scale"));
  EXPECT_EQ(p.hw.origin(model::StackKind::hf_peft).source, "hand");
}

TEST(ProfileStackTest, SpreadsAreWrittenAndReadBack) {
  const Profile p = with_fitted_stack();
  const std::string text = to_toml(p);
  EXPECT_TRUE(contains(text, "host_spread = 0.2345678901234567\n")) << text;
  EXPECT_TRUE(contains(text, "device_spread = ")) << text;
  const Profile back = parse_profile(text, "test.toml");
  EXPECT_EQ(back.hw.value("host_spread", model::StackKind::hf_peft), 0.2345678901234567);
  EXPECT_EQ(back.hw.value("device_spread", model::StackKind::hf_peft), 1.0 / 11.0);
}

TEST(ProfileStackTest, TableWithoutSpreadsReadsTheirPriors) {
  // Profiles written before the spreads existed (hwprofiles/h200.toml among them).
  const Profile p = parse_profile(builtin_text(kPriorBase) + kStackTable, "test.toml");
  EXPECT_EQ(p.hw.value("host_spread", model::StackKind::hf_peft), 0.20);
  EXPECT_EQ(p.hw.value("device_spread", model::StackKind::hf_peft), 0.10);
  const Profile h200 = builtin_profile("h200");
  EXPECT_EQ(h200.hw.value("host_spread", model::StackKind::hf_peft), prior("host_spread"));
  EXPECT_EQ(h200.hw.value("device_spread", model::StackKind::hf_peft), prior("device_spread"));
}

TEST(ProfileStackTest, SpreadsOutsideZeroToOneAreRefusedNamingTheirPath) {
  for (const char* key : {"host_spread", "device_spread"}) {
    for (const char* value : {"1.0", "1.5"}) {
      const std::string msg =
          parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\n" + key + " = " + value + "\n");
      EXPECT_TRUE(contains(msg, std::string("[stack.hf-peft].") + key)) << msg;
      EXPECT_TRUE(contains(msg, "[0, 1)")) << msg;
    }
    const std::string negative = parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\n" + key + " = -0.1\n");
    EXPECT_TRUE(contains(negative, ">= 0")) << negative;
    EXPECT_EQ(parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\n" + key + " = 0.0\n"), "");
    EXPECT_EQ(parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\n" + key + " = 0.99\n"), "");
  }
}

TEST(ProfileStackTest, UnknownKeyIsRefusedNamingItsPath) {
  const std::string msg = parse_error(builtin_text(kPriorBase) + kStackTable + "host_per_layer_s = 1e-5\n");
  EXPECT_TRUE(contains(msg, "stack.hf-peft")) << msg;
  EXPECT_TRUE(contains(msg, "host_per_layer_s")) << msg;
  EXPECT_TRUE(contains(msg, "test.toml")) << msg;
}

TEST(ProfileStackTest, UnknownStackIsRefused) {
  const std::string msg = parse_error(builtin_text(kPriorBase) + "\n[stack.deepspeed]\ncalibrated = true\n");
  EXPECT_TRUE(contains(msg, "deepspeed")) << msg;
}

TEST(ProfileStackTest, NegativeValueIsRefusedNamingItsPath) {
  const std::string msg = parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\nsaved_scale = -0.5\n");
  EXPECT_TRUE(contains(msg, "saved_scale")) << msg;
  EXPECT_TRUE(contains(msg, "stack.hf-peft")) << msg;
  EXPECT_TRUE(contains(msg, ">= 0")) << msg;
}

TEST(ProfileStackTest, ZeroDeviceScaleIsRefused) {
  // The device time divides by nothing here, but a zero scale erases the stack's device work.
  const std::string msg = parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\ndevice_scale = 0\n");
  EXPECT_TRUE(contains(msg, "device_scale")) << msg;
  EXPECT_TRUE(contains(msg, "> 0")) << msg;
}

TEST(ProfileStackTest, MistypedValueIsRefused) {
  EXPECT_NE(parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\ncalibrated = \"yes\"\n"), "");
  EXPECT_NE(parse_error(builtin_text(kPriorBase) + "\n[stack.hf-peft]\nhost_per_op_s = \"fast\"\n"), "");
  EXPECT_NE(parse_error(builtin_text(kPriorBase) + "\nstack = 3\n"), "");
}

TEST(ProfileStackTest, BuiltinH200ParsesAndValidates) {
  const Profile p = builtin_profile("h200");
  EXPECT_EQ(p.source_text_name, "builtin:h200.toml");
  EXPECT_NO_THROW(validate_profile(p));
  EXPECT_EQ(parse_profile(to_toml(p), p.source_text_name), p);
}

}  // namespace lorasim::hw
