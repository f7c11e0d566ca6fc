// Tests of the profile schema: parsing, validation messages, to_toml round trips and the
// atomic writer.
#include "hwprofiles/profile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "hwprofiles/builtin.h"
#include "model/training_stack.h"
#include "model/coefficients.h"
#include "model/error.h"
#include "model/hardware.h"

namespace lorasim::hw {
namespace {

namespace fs = std::filesystem;

// A datasheet prior (no [calibration] table), the template the parsing tests edit.
std::string prior_text() {
  for (const auto& p : builtin_profile_texts())
    if (p.name == "a100-80gb") return std::string(p.toml);
  ADD_FAILURE() << "no builtin a100-80gb";
  return "";
}

/// The source tree: LORASIM_SOURCE_DIR from the environment, else the one the tests were built from
/// (__FILE__ may be relative to the build directory under ccache).
fs::path source_dir() {
  const char* env = std::getenv("LORASIM_SOURCE_DIR");
  return env ? fs::path(env) : fs::path(LORASIM_SOURCE_DIR);
}

/// Replaces the first line starting with `key =` by `replacement` (or deletes it when empty).
std::string with_line(std::string text, const std::string& key, const std::string& replacement) {
  const size_t at = text.find("\n" + key + " =");
  EXPECT_NE(at, std::string::npos) << key;
  const size_t end = text.find('\n', at + 1);
  text.replace(at + 1, end - at, replacement.empty() ? "" : replacement + "\n");
  return text;
}

/// The ConfigError message parse_profile throws for `text`, or "" when it parses.
std::string parse_error(const std::string& text, const std::string& source = "test.toml") {
  try {
    parse_profile(text, source);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

/// A fresh empty directory under the test temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "lorasim_hw_XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path))
      names.push_back(e.path().filename().string());
    return names;
  }
};

TEST(ProfileTest, BuiltinA100ReadsItsDatasheetFigures) {
  const Profile p = parse_profile(prior_text(), "builtin:a100-80gb.toml");
  EXPECT_EQ(p.schema_version, 1);
  EXPECT_EQ(p.hw.name, "a100-80gb");
  EXPECT_EQ(p.hw.memory_bytes, int64_t{81920} * 1048576);
  EXPECT_DOUBLE_EQ(p.hw.peak_bf16_tflops, 312);
  EXPECT_DOUBLE_EQ(p.hw.hbm_bandwidth_gbps, 2039);
  EXPECT_DOUBLE_EQ(p.hw.value("gemm_tflops"), 0.55 * 312);
  EXPECT_DOUBLE_EQ(p.hw.value("memory_gbps"), 0.6 * 2039);
  EXPECT_DOUBLE_EQ(p.hw.value("optimizer_per_param_s"), 28 / (0.6 * 2039 * 1e9));
  EXPECT_DOUBLE_EQ(p.hw.value("workspace_bytes"), 134217728);
  EXPECT_EQ(p.hw.value("expected_memory_error_bytes"), 2147483648.0);  // a prior's device term
  EXPECT_EQ(p.hw.overlap, model::Overlap::max);
  EXPECT_EQ(p.hw.coefficients_precision, model::Precision::bf16);
  EXPECT_FALSE(p.hw.calibrated);
  EXPECT_EQ(p.origin_source, "datasheet prior");
  EXPECT_EQ(p.source_text_name, "builtin:a100-80gb.toml");
  EXPECT_TRUE(p.calibration.empty());
}

TEST(ProfileTest, TheKeptH100PriorReadsItsDatasheetFiguresAndTheBuiltinH100IsCalibrated) {
  // The H100's datasheet prior stays in bench/hf/profiles (the leave-one-GPU-out comparison
  // predicts from it); the embedded h100-sxm is a calibration with the same datasheet figures.
  const fs::path path = source_dir() / "bench" / "hf" / "profiles" / "h100-prior.toml";
  const Profile p = load_profile_file(path.string());
  EXPECT_EQ(p.hw.name, "h100-prior");
  EXPECT_EQ(p.hw.memory_bytes, int64_t{81559} * 1048576);
  EXPECT_DOUBLE_EQ(p.hw.value("gemm_tflops"), 0.55 * 989);
  EXPECT_DOUBLE_EQ(p.hw.value("memory_gbps"), 0.6 * 3350);
  EXPECT_DOUBLE_EQ(p.hw.value("optimizer_per_param_s"), 28 / (0.6 * 3350 * 1e9));
  EXPECT_FALSE(p.hw.calibrated);
  EXPECT_EQ(p.origin_source, "datasheet prior");
  const Profile h100 = builtin_profile("h100-sxm");
  EXPECT_TRUE(h100.hw.calibrated);
  EXPECT_TRUE(h100.hw.origin(model::StackKind::hf_peft).calibrated);
  EXPECT_EQ(h100.hw.peak_bf16_tflops, p.hw.peak_bf16_tflops);
  EXPECT_EQ(h100.hw.hbm_bandwidth_gbps, p.hw.hbm_bandwidth_gbps);
  EXPECT_EQ(model::compute_capability(h100.hw), model::compute_capability(p.hw));
}

TEST(ProfileTest, ToTomlRoundTripsEveryBuiltin) {
  for (const auto& name : builtin_profile_names()) {
    const Profile p = builtin_profile(name);
    EXPECT_EQ(parse_profile(to_toml(p), p.source_text_name), p) << name << "\n" << to_toml(p);
  }
}

TEST(ProfileTest, ToTomlRoundTripsAwkwardValues) {
  Profile p = builtin_profile("h200");
  p.hw.display_name = "quote \" backslash \\ tab \t unicode \xc3\xa9";
  p.hw.value("gemm_tflops") = 0.1 + 0.2;  // not the shortest decimal of anything simple
  p.hw.value("host_per_op_s") = 1.2345678901234567e-7;
  p.hw.value("workspace_bytes") = 123456789.5;  // a non-integral byte count stays a float
  p.hw.value("context_bytes") = 5e8;
  p.hw.overlap = model::Overlap::sum;
  p.hw.coefficients_precision = model::Precision::fp32;
  p.hw.calibrated = true;
  p.origin_source = "lorasim calibrate --plan quick";
  p.calibration.set("date", std::string("2025-01-31T12:00:00Z"));
  p.calibration.set("driver_version", std::string("550.54.15"));
  p.calibration.set("duration_s", 93.25);
  p.calibration.set("points", int64_t{48});
  p.calibration.set("time_rms_rel", 0.031);
  p.calibration.set("whole_number_float", 2.0);  // must come back as a double, not an integer
  p.calibration.set("cuda_graphs", false);
  p.calibration.set("odd key.with dots", std::string("kept"));
  const Profile back = parse_profile(to_toml(p), p.source_text_name);
  EXPECT_EQ(back, p) << to_toml(p);
  ASSERT_NE(back.calibration.find("whole_number_float"), nullptr);
  EXPECT_TRUE(std::holds_alternative<double>(*back.calibration.find("whole_number_float")));
  // File order, not alphabetical order, survives the round trip.
  EXPECT_EQ(back.calibration.entries.front().first, "date");
  EXPECT_EQ(back.calibration.entries.back().first, "odd key.with dots");
}

TEST(ProfileTest, CalibrationDatesAreKeptAsText) {
  const Profile p = parse_profile(prior_text() + "\n[calibration]\ndate = 2025-01-31\n", "t.toml");
  ASSERT_NE(p.calibration.find("date"), nullptr);
  EXPECT_EQ(std::get<std::string>(*p.calibration.find("date")), "2025-01-31");
}

TEST(ProfileTest, MalformedTomlReportsFileLineAndColumn) {
  std::string text = prior_text();
  text = with_line(text, "memory_gbps", "memory_gbps = = 3");
  const std::string msg = parse_error(text, "mine.toml");
  EXPECT_NE(msg.find("mine.toml:"), std::string::npos) << msg;
  // "mine.toml:LINE:COLUMN: ..." with the line of the bad key.
  size_t line = 1;
  for (size_t i = 0; i < text.find("memory_gbps = ="); ++i) line += text[i] == '\n';
  EXPECT_EQ(msg.rfind("mine.toml:" + std::to_string(line) + ":", 0), 0u) << msg;
}

TEST(ProfileTest, NewerSchemaVersionIsRefused) {
  std::string text = with_line(prior_text(), "schema_version", "schema_version = 2");
  text += "\n[future]\nwhatever = 1\n";  // a newer file's new keys must not mask the version
  EXPECT_EQ(parse_error(text, "p.toml"),
            "profile p.toml was written by a newer lorasim (schema_version 2); this one reads 1: "
            "upgrade lorasim, or recalibrate with this version");
}

TEST(ProfileTest, MissingSchemaVersionIsRefused) {
  const std::string msg = parse_error(with_line(prior_text(), "schema_version", ""));
  EXPECT_NE(msg.find("schema_version is missing"), std::string::npos) << msg;
}

TEST(ProfileTest, UnknownKeyIsRefusedNamingIt) {
  const std::string msg =
      parse_error(with_line(prior_text(), "gemm_tflops", "gemm_tflop = 500.0"), "x.toml");
  EXPECT_NE(msg.find("unknown key [time].gemm_tflop (did you mean gemm_tflops?)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.rfind("x.toml:", 0), 0u) << msg;
}

TEST(ProfileTest, UnknownSectionIsRefused) {
  const std::string msg = parse_error(prior_text() + "\n[tiem]\nx = 1\n");
  EXPECT_NE(msg.find("unknown key tiem (did you mean time?)"), std::string::npos) << msg;
}

TEST(ProfileTest, MissingKeyIsNamed) {
  EXPECT_EQ(parse_error(with_line(prior_text(), "gemm_tflops", ""), "builtin:h200.toml"),
            "builtin:h200.toml: [time].gemm_tflops is missing");
}

TEST(ProfileTest, MissingSectionIsNamed) {
  std::string text = prior_text();
  text = text.substr(0, text.find("[memory]"));
  EXPECT_EQ(parse_error(text, "f.toml"), "f.toml: [memory] section is missing");
}

TEST(ProfileTest, WrongTypeIsRefusedWithPosition) {
  const std::string msg =
      parse_error(with_line(prior_text(), "memory_bytes", "memory_bytes = \"141 GB\""), "f.toml");
  EXPECT_NE(msg.find("[gpu].memory_bytes must be an integer, got a string"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.rfind("f.toml:", 0), 0u) << msg;
  EXPECT_NE(parse_error(with_line(prior_text(), "calibrated", "calibrated = 1"))
                .find("[profile].calibrated must be true or false, got an integer"),
            std::string::npos);
}

TEST(ProfileTest, IntegersAreAcceptedWhereFloatsAreExpected) {
  const Profile p = parse_profile(with_line(prior_text(), "gemm_tflops", "gemm_tflops = 500"), "f");
  EXPECT_DOUBLE_EQ(p.hw.value("gemm_tflops"), 500);
}

TEST(ProfileTest, OutOfRangeValuesAreRefused) {
  struct Case {
    std::string key, line, expected;
  };
  const Case cases[] = {
      // A rate out of its range reads alike, whatever the value: 0, negative, nan or a subnormal
      // (issue 29: nan and 4.9e-324 got two different messages).
      {"gemm_tflops", "gemm_tflops = 0.0", "[time].gemm_tflops must be a rate in [1e-06, 1e+12] (a rate outside it "
                                           "is a typo, not a device) (got 0.0)"},
      {"memory_gbps", "memory_gbps = -1.0", "[time].memory_gbps must be a rate in [1e-06, 1e+12] (a rate outside "
                                            "it is a typo, not a device) (got -1.0)"},
      {"memory_gbps", "memory_gbps = nan", "[time].memory_gbps must be a rate in [1e-06, 1e+12] (a rate outside it "
                                           "is a typo, not a device) (got nan)"},
      {"memory_gbps", "memory_gbps = 4.9e-324", "[time].memory_gbps must be a rate in [1e-06, 1e+12] (a rate "
                                                "outside it is a typo, not a device) (got 5e-324)"},
      {"memory_gbps", "memory_gbps = inf", "[time].memory_gbps must be a rate in [1e-06, 1e+12]"},
      {"saved_scale", "saved_scale = inf", "[memory].saved_scale must be a finite number (got inf)"},
      {"memory_bytes", "memory_bytes = 0", "[gpu].memory_bytes must be > 0 (got 0)"},
      {"saved_scale", "saved_scale = -0.5", "[memory].saved_scale must be >= 0 (got -0.5)"},
      {"expected_time_error", "expected_time_error = 50.0",
       "[profile].expected_time_error must be a fraction in [0, 10]"},
      {"overlap_loss", "overlap_loss = 1.5", "[time].overlap_loss must be a share in [0, 1] (got 1.5)"},
      {"overlap", "overlap = \"min\"", "[profile].overlap must be one of \"max\", \"sum\""},
      {"coefficients_precision", "coefficients_precision = \"int8\"",
       "[profile].coefficients_precision must be one of \"bf16\", \"fp16\", \"fp32\""},
  };
  for (const auto& c : cases) {
    const std::string msg = parse_error(with_line(prior_text(), c.key, c.line), "r.toml");
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.line << " -> " << msg;
    EXPECT_EQ(msg.rfind("r.toml:", 0), 0u) << msg;  // with the value's line and column
  }
}

TEST(ProfileTest, Bf16CoefficientsOnADeviceWithoutBf16AreRefused) {
  const std::string msg =
      parse_error(with_line(prior_text(), "bf16_supported", "bf16_supported = false"));
  EXPECT_NE(msg.find("[profile].coefficients_precision is \"bf16\" but [gpu].bf16_supported"),
            std::string::npos)
      << msg;
}

TEST(ProfileTest, NestedCalibrationValuesAreRefused) {
  const std::string msg = parse_error(prior_text() + "\n[calibration]\nplan = [1, 2]\n");
  EXPECT_NE(msg.find("[calibration].plan must be a string, number or boolean, got an array"),
            std::string::npos)
      << msg;
}

TEST(ProfileTest, ValidateProfileNamesTheKeyWithoutAFile) {
  Profile p = builtin_profile("l4");
  p.source_text_name.clear();
  p.hw.value("attention_tflops") = -3;
  try {
    validate_profile(p);
    FAIL() << "accepted a negative rate";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "profile 'l4': [time].attention_tflops must be a rate in [1e-06, 1e+12] (a rate outside "
                           "it is a typo, not a device) (got -3.0)");
  }
}

TEST(ProfileTest, LoadProfileFileUsesThePathInMessages) {
  TempDir dir;
  const std::string path = (dir.path / "bad.toml").string();
  std::ofstream(path) << with_line(prior_text(), "gemm_tflops", "");
  try {
    load_profile_file(path);
    FAIL() << "accepted a profile without gemm_tflops";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": [time].gemm_tflops is missing");
  }
  EXPECT_THROW(load_profile_file(dir.path.string()), ConfigError);  // a directory
}

TEST(ProfileTest, AnAbsentFilePointsAtGpuForEmbeddedProfiles) {
  // Offered "a built-in name", which a profile path never accepts.
  TempDir dir;
  const std::string path = (dir.path / "absent.toml").string();
  try {
    load_profile_file(path);
    FAIL() << "read an absent file";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cannot read profile '" + path + "'", 0), 0u) << what;
    // The reason is the system's; the CLI adds where embedded profiles are (the "profile" quantity).
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
    EXPECT_EQ(e.quantity(), "profile");
    EXPECT_EQ(what.find("built-in name"), std::string::npos) << what;
  }
}

TEST(ProfileTest, AnEmptyFileIsSaidToBeEmpty) {
  TempDir dir;
  const std::string path = (dir.path / "empty.toml").string();
  std::ofstream{path};
  try {
    load_profile_file(path);
    FAIL() << "accepted an empty profile";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("profile '" + path + "' is empty", 0), 0u) << e.what();
  }
  try {
    load_profile_file(dir.path.string());
    FAIL() << "read a directory";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not a readable file"), std::string::npos) << e.what();
  }
}

TEST(ProfileTest, EveryCoefficientOfTheTableRoundTripsThroughToml) {
  // One distinct value per stored value of the table, inside its range: to_toml writes each
  // under its section and key, and parse_profile reads each back into the same slot.
  Profile p = builtin_profile("h100-sxm");
  for (int s = 0; s < model::stack_count(); ++s) {
    p.hw.origin(model::StackKind{s}).has_values = true;  // every stack holding every value of its own
    p.hw.origin(model::StackKind{s}).inherited.clear();
  }
  const auto& values = model::stored_values();
  for (size_t i = 0; i < values.size(); ++i) {
    const model::Range r = values[i].entry().range;
    const bool small = r == model::Range::share || r == model::Range::fraction || r == model::Range::relative_error;
    p.hw.values[i] = small ? 0.9 * static_cast<double>(i + 1) / static_cast<double>(values.size() + 1)
                          : 1.5 + static_cast<double>(i);
  }
  const std::string text = to_toml(p);
  const Profile back = parse_profile(text, p.source_text_name);
  for (size_t i = 0; i < values.size(); ++i) {
    const model::StoredValue& v = values[i];
    EXPECT_EQ(back.hw.values[i], p.hw.values[i]) << v.row->name;
    const size_t section = text.find(std::string("\n[") + v.entry().section + "]\n");
    const size_t key = text.find(std::string("\n") + v.row->name + " = ", section);
    ASSERT_NE(section, std::string::npos) << v.row->name;
    ASSERT_NE(key, std::string::npos) << v.row->name;
    EXPECT_EQ(text.find("\n[", section + 1), text.find("\n[", key)) << v.row->name << " outside its section";
  }
  EXPECT_EQ(back, p);
}

TEST(ProfileTest, AtomicWriteLeavesOnlyTheProfile) {
  TempDir dir;
  const std::string path = (dir.path / "mine.toml").string();
  Profile p = builtin_profile("a10g");
  p.hw.calibrated = true;
  write_profile_file(p, path);
  p.hw.value("gemm_tflops") = 40;  // overwrite an existing file
  write_profile_file(p, path);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"mine.toml"});
  Profile back = load_profile_file(path);
  p.source_text_name = path;
  EXPECT_EQ(back, p);
}

TEST(ProfileTest, WriteIntoAMissingDirectoryThrowsAndCreatesNothing) {
  TempDir dir;
  const fs::path path = dir.path / "no-such-dir" / "mine.toml";
  EXPECT_THROW(write_profile_file(builtin_profile("t4"), path.string()), ConfigError);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ProfileTest, WriteIntoAnUnwritableDirectoryThrowsAndCreatesNothing) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
  const fs::path path = dir.path / "mine.toml";
  try {
    write_profile_file(builtin_profile("t4"), path.string());
    FAIL() << "wrote into a read-only directory";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  fs::permissions(dir.path, fs::perms::owner_all);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ProfileTest, FailedRenameRemovesTheTemporary) {
  TempDir dir;
  const fs::path path = dir.path / "occupied";
  fs::create_directory(path);  // rename() cannot replace a directory with a file
  fs::create_directory(path / "child");
  EXPECT_THROW(write_profile_file(builtin_profile("t4"), path.string()), ConfigError);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"occupied"});
}

TEST(ProfileTest, WritingAnInvalidProfileIsRefused) {
  TempDir dir;
  Profile p = builtin_profile("t4");
  p.hw.memory_bytes = 0;
  EXPECT_THROW(write_profile_file(p, (dir.path / "x.toml").string()), ConfigError);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ProfileTest, DocumentedExampleParses) {
  // Keeps docs/profile-schema.md honest: its example must be a valid profile.
  std::ifstream in(source_dir() / "docs" / "profile-schema.md");
  ASSERT_TRUE(in) << "docs/profile-schema.md not found";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = doc.find("```toml\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  const Profile p = parse_profile(doc.substr(begin + 8, end - begin - 8), "profile-schema.md");
  EXPECT_EQ(p.hw.name, "h200");
  ASSERT_NE(p.calibration.find("time_rms_rel"), nullptr);
  // The example is the shipped (calibrated) h200 profile.
  Profile shipped = builtin_profile("h200");
  shipped.source_text_name = p.source_text_name;
  EXPECT_EQ(p, shipped);
}

TEST(ProfileTest, RecomputeHostShareIsOptionalAndDefaultsToOne) {
  // Profiles written before the key existed keep predicting what they predicted.
  const std::string text = prior_text();
  ASSERT_EQ(text.find("recompute_host_share"), std::string::npos);
  EXPECT_DOUBLE_EQ(parse_profile(text, "old.toml").hw.value("recompute_host_share"), 1.0);
  // Given, it is read, range-checked and written back.
  const std::string with = with_line(text, "host_per_op_s", "host_per_op_s = 2e-05\nrecompute_host_share = 0.4");
  const Profile p = parse_profile(with, "new.toml");
  EXPECT_DOUBLE_EQ(p.hw.value("recompute_host_share"), 0.4);
  EXPECT_DOUBLE_EQ(parse_profile(to_toml(p), "again.toml").hw.value("recompute_host_share"), 0.4);
  EXPECT_NE(parse_error(with_line(text, "host_per_op_s", "host_per_op_s = 2e-05\nrecompute_host_share = -1")).find(
                "[time].recompute_host_share must be >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace lorasim::hw
