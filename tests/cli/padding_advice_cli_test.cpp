// End-to-end tests of the recommendation's padding advice with --lengths: the padding waste of
// the recommended and the next best split, packing or grouping where either is faster, and the
// split expandable segments would let fit where the default allocator's bound refuses it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace lorasim::testing;

std::vector<std::string> recommend(const std::string& file, std::initializer_list<std::string> more) {
  std::vector<std::string> v = {"recommend", "--gpu", "h200", "--model", "qwen3-1.7b", "--effective-batch", "16",
                                "--lengths", file, "--max-length", "1024"};
  v.insert(v.end(), more);
  return v;
}

TEST(PaddingAdviceCliTest, TheTableSaysThePaddingOfTheBestTwoAndWhatWouldBeFaster) {
  TempDir dir;
  write_file(dir / "lengths.csv", "length,count\n64,300\n256,120\n1500,6\n");
  const std::string file = (dir / "lengths.csv").string();
  const json j = ok_json(recommend(file, {"--format", "json"}));
  const json& rec = j["recommended"];
  ASSERT_TRUE(rec["next_best"].is_object()) << rec.dump();
  int rank2 = 0;
  for (const json& s : j["splits"])
    if (s["rank"] == 2) {
      ++rank2;
      EXPECT_EQ(rec["next_best"]["micro_batch"], s["micro_batch"]);
      EXPECT_EQ(rec["next_best"]["grad_ckpt"], s["grad_ckpt"]);
      EXPECT_EQ(rec["next_best"]["padding_fraction"], s["padding_fraction"]);
    }
  EXPECT_EQ(rank2, 1);
  ASSERT_TRUE(rec["faster_alternatives"].is_array());
  bool packed = false;
  for (const json& alt : rec["faster_alternatives"]) {
    EXPECT_LT(alt["epoch_time_s"].get<double>(), rec["epoch_time_s"].get<double>());
    EXPECT_GE(alt["saving"].get<double>(), 0.01);
    packed |= alt["flag"] == "--padding packed";
  }
  EXPECT_TRUE(packed) << rec.dump();  // this data is mostly padding at any micro-batch above 1
  bool noted = false;
  for (const json& n : j["notes"]) noted |= n.get<std::string>().rfind("--padding packed would make an epoch", 0) == 0;
  EXPECT_TRUE(noted) << j["notes"].dump();

  const std::string out = ok(recommend(file, {}));
  EXPECT_NE(out.find("\npadding:     "), std::string::npos) << out;
  EXPECT_NE(out.find("of the recommended split's tokens are padding; the next best, "), std::string::npos) << out;
  EXPECT_NE(out.find("note: --padding packed would make an epoch at "), std::string::npos) << out;
  // Already packed: nothing to advise.
  const json p = ok_json(recommend(file, {"--padding", "packed", "--format", "json"}));
  EXPECT_TRUE(p["recommended"]["faster_alternatives"].empty()) << p["recommended"].dump();
}

TEST(PaddingAdviceCliTest, SaysWhatTheDefaultAllocatorsFragmentationCostsAndTheEnvLine) {
  // lengths-run2's cell: a plain Trainer's 2x8 ran a whole epoch at 15.0 GiB under a 23 GiB cap,
  // 1.68x faster than 1x16. Its worst case under the default allocator's bound is above the cap;
  // what it needs at the limit (varying_need_default) is below it, so it is recommended.
  const std::string file = std::string(LORASIM_SOURCE_DIR) + "/bench/hf/lengths/longtail.csv";
  const json at23 = ok_json(recommend(file, {"--memory-limit", "23.5GiB", "--grad-ckpt", "false", "--allocator",
                                             "default", "--format", "json"}));
  ASSERT_EQ(at23["recommended"]["micro_batch"], 2) << at23["recommended"].dump();
  for (const json& s : at23["splits"])
    if (s["micro_batch"] == 2) {
      EXPECT_GT(s["worst_reserved_bytes"].get<double>(), 23.5 * (1 << 30)) << s.dump();
      EXPECT_LT(s["needed_bytes"].get<double>(), s["worst_reserved_bytes"].get<double>()) << s.dump();
    }
  // At 16.5 GiB (16 usable) the default allocator needs more than the usable memory for 2x8 (16.4 GiB),
  // expandable segments do not (15.2 GiB): the note names it and the environment line.
  const json j = ok_json(recommend(file, {"--memory-limit", "16.5GiB", "--grad-ckpt", "false", "--allocator",
                                          "default", "--format", "json"}));
  const json& rec = j["recommended"];
  ASSERT_EQ(rec["micro_batch"], 1) << rec.dump();
  int found = 0;
  for (const json& alt : rec["faster_alternatives"])
    if (alt["flag"] == "--allocator expandable") {
      ++found;
      EXPECT_EQ(alt["env"], "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
      EXPECT_EQ(alt["micro_batch"], 2);
      EXPECT_EQ(alt["accumulation"], 8);
      EXPECT_TRUE(alt["fits"].get<bool>());
      EXPECT_GT(alt["saving"].get<double>(), 0.01);
    }
  EXPECT_EQ(found, 1) << rec.dump();
  int notes = 0;
  for (const json& n : j["notes"])
    notes += n.get<std::string>().rfind("the default allocator's fragmentation refuses 2x8", 0) == 0;
  EXPECT_EQ(notes, 1) << j["notes"].dump();
  // Asked for expandable segments already: nothing to say.
  const json e = ok_json(recommend(file, {"--memory-limit", "16.5GiB", "--grad-ckpt", "false", "--allocator",
                                          "expandable", "--format", "json"}));
  for (const json& alt : e["recommended"]["faster_alternatives"]) EXPECT_NE(alt["flag"], "--allocator expandable");
}

}  // namespace
