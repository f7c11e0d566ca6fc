// The workload's inputs for what comes next (lengths, padding, weight format, data
// parallelism): their defaults are today's, validation names quantities, the cost model refuses
// what it does not model yet and predicts rows of seq_len whatever the data's lengths. Also the frozen weights' bytes by storage format.
#include "model/workload.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/analytics.h"
#include "model/checked.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "tests/model/test_hardware.h"

using namespace lorasim::model;
using lorasim::InputError;
using lorasim::testing::test_gpu;

namespace {

Workload qwen(int64_t seq_len = 512) {
  Workload w;
  w.arch = preset("qwen3-1.7b");
  w.train.seq_len = seq_len;
  return w;
}

// The InputError message of `f`, or "(no error)".
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string validation_error(const Workload& w) {
  return input_error([&] { w.validate(); });
}
std::string cost_model_error(const Workload& w) {
  return input_error([&] { CostModel(w, test_gpu()); });
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(WorkloadTest, DefaultsAreEverySequenceAtSeqLenInTheComputePrecisionOnOneProcess) {
  const Workload w = qwen(768);
  EXPECT_FALSE(w.train.lengths.has_value());
  EXPECT_EQ(w.train.padding, Padding{});
  EXPECT_FALSE(w.train.weight_format.has_value());
  EXPECT_EQ(w.train.weight_storage(), WeightFormat::bf16);
  EXPECT_EQ(w.train.data_parallel_processes, 1);
  const LengthDistribution d = w.train.length_distribution();
  EXPECT_TRUE(d.one_point());
  EXPECT_EQ(d.longest_tokens(), 768);
  EXPECT_EQ(d.max_length_tokens(), 768);
  Workload fp32 = w;
  fp32.train.precision = Precision::fp32;
  EXPECT_EQ(fp32.train.weight_storage(), WeightFormat::fp32);
  EXPECT_NO_THROW(w.validate());
  EXPECT_NO_THROW(require_modelled(w));
}

TEST(WorkloadTest, TheDefaultsStatedExplicitlyPredictTheSame) {
  for (StackSpec stack : {StackSpec{}, StackSpec::lorasim_runner()}) {
    Workload plain = qwen(1024);
    plain.stack = stack;
    Workload stated = plain;
    stated.train.lengths = LengthDistribution::fixed(1024);
    stated.train.weight_format = WeightFormat::bf16;
    stated.train.padding = Padding::multiple_of(64);  // 1024 is a multiple: nothing to pad
    EXPECT_NO_THROW(stated.validate());
    const CostModel a(plain, test_gpu()), b(stated, test_gpu());
    for (int64_t mb : {1, 4, 16}) {
      EXPECT_EQ(a.step_time_s(mb, 2), b.step_time_s(mb, 2));
      EXPECT_EQ(a.memory(mb).worst_reserved_bytes, b.memory(mb).worst_reserved_bytes);
    }
    // A histogram whose every sequence is 1024 tokens, truncated at that length, and packing.
    stated.train.lengths = LengthDistribution::from_bins({{1024, 500}}).truncated(1024);
    stated.train.padding = parse_padding("packed");
    EXPECT_EQ(CostModel(stated, test_gpu()).step_time_s(4, 2), a.step_time_s(4, 2));
  }
}

TEST(WorkloadTest, CostModelRefusesWhatItDoesNotModelYet) {
  Workload w = qwen();
  w.train.weight_format = WeightFormat::nf4;
  w.train.grad_ckpt = true;
  EXPECT_NO_THROW(w.validate());
  // bitsandbytes is not in LibTorch: the runner's stack refuses a quantized base in one line.
  std::string e = cost_model_error(w);
  EXPECT_EQ(e, "the lorasim stack has no nf4 base (bitsandbytes is not in LibTorch): predict a quantized base "
               "with the hf-peft stack");
  EXPECT_THROW(features(w, 1), InputError);  // the entry the fit uses too
  w.stack = StackSpec{};  // hf-peft models it
  EXPECT_NO_THROW(features(w, 1));

  w = qwen();
  w.train.precision = Precision::bf16;
  w.train.weight_format = WeightFormat::fp32;  // fp32 master weights under autocast: valid, not modelled
  EXPECT_NO_THROW(w.validate());
  EXPECT_TRUE(contains(cost_model_error(w), "not modelled yet"));

  w = qwen();
  w.train.data_parallel_processes = 4;
  EXPECT_NO_THROW(w.validate());
  e = cost_model_error(w);
  EXPECT_TRUE(contains(e, "4 data-parallel processes") && contains(e, "not modelled yet")) << e;
}

// The data's lengths and padding are the simulator's (simulator/lengths_sim.h): the cost model
// predicts rows of seq_len tokens whatever the data they came from.
TEST(WorkloadTest, CostModelPredictsRowsOfTheSequenceLengthWhateverTheLengths) {
  const Workload plain = qwen();
  std::vector<Workload> data(3, plain);
  data[0].train.lengths = LengthDistribution::from_bins({{100, 3}, {512, 1}});
  data[1].train.lengths = LengthDistribution::fixed(500);
  data[1].train.padding = Padding::multiple_of(64);
  data[2].train.lengths = LengthDistribution::fixed(300).truncated(1024);
  data[2].train.padding = parse_padding("max_length");
  for (const Workload& w : data) {
    EXPECT_EQ(cost_model_error(w), "(no error)");
    EXPECT_EQ(CostModel(w, test_gpu()).step_time_s(4, 2), CostModel(plain, test_gpu()).step_time_s(4, 2));
    EXPECT_EQ(CostModel(w, test_gpu()).memory(4).worst_reserved_bytes, CostModel(plain, test_gpu()).memory(4).worst_reserved_bytes);
  }
}

TEST(WorkloadTest, ValidationNamesQuantitiesNotFlags) {
  Workload w = qwen(0);
  EXPECT_EQ(validation_error(w), "sequence length must be a positive number of tokens, got 0");
  w = qwen();
  w.lora.rank = 0;
  EXPECT_EQ(validation_error(w), "LoRA rank must be positive, got 0");
  w.lora.rank = 4096;
  EXPECT_TRUE(contains(validation_error(w), "LoRA rank 4096 exceeds the hidden size 2048"));
  w = qwen();
  w.lora.alpha = 0;
  EXPECT_TRUE(contains(validation_error(w), "LoRA alpha must be positive"));
  w = qwen();
  w.train.data_parallel_processes = 0;
  EXPECT_EQ(validation_error(w), "the number of data-parallel processes must be at least 1, got 0");
  w = qwen();
  w.train.padding = {PaddingMode::multiple, 0};
  EXPECT_EQ(validation_error(w), "padding to a multiple needs a positive multiple of tokens, got 0");
  for (const Workload& bad : {qwen(0), w}) EXPECT_FALSE(contains(validation_error(bad), "--"));
}

TEST(WorkloadTest, WeightFormatsComputeInThePrecision) {
  Workload w = qwen();
  for (WeightFormat f : {WeightFormat::int8, WeightFormat::nf4, WeightFormat::fp4, WeightFormat::fp32}) {
    for (Precision p : {Precision::bf16, Precision::fp16, Precision::fp32}) {
      w.train.precision = p;
      w.train.weight_format = f;
      w.train.grad_ckpt = true;  // prepare_model_for_kbit_training's
      EXPECT_NO_THROW(w.validate()) << weight_format_name(f) << " in " << precision_name(p);
    }
  }
  w.train.precision = Precision::fp16;
  w.train.weight_format = WeightFormat::bf16;
  EXPECT_EQ(validation_error(w), "base weights stored in bf16 cannot compute in fp16: store them in fp16 or fp32, "
                                 "or compute in bf16");
  w.train.precision = Precision::fp32;
  EXPECT_THROW(w.validate(), InputError);  // bf16 weights would not compute in fp32 without a copy
  for (const char* name : {"bf16", "fp16", "fp32", "int8", "nf4", "fp4"})
    EXPECT_STREQ(weight_format_name(parse_weight_format(name)), name);
  EXPECT_THROW(parse_weight_format("int4"), InputError);
  EXPECT_EQ(weight_format_of(Precision::fp16), WeightFormat::fp16);
}

TEST(WorkloadTest, ValidationSaysWhichQuantityIsTooLarge) {
  // A width whose adapter state (16 bytes per parameter) would overflow int64 is refused by the
  // architecture's bounds first, naming the quantity, before any byte count is formed.
  Workload w;
  w.arch = preset("tiny");
  w.arch.intermediate_size = int64_t{1} << 52;
  w.lora.rank = 64;
  const std::string e = validation_error(w);
  EXPECT_TRUE(contains(e, "too large") && contains(e, "intermediate_size is 4503599627370496")) << e;
  // At the largest widths the bounds allow, every static count still fits in int64.
  w.arch.intermediate_size = 262144;
  EXPECT_NO_THROW(w.validate());
}

TEST(WeightFormatTest, StoredBytesOfAMatrixAsBitsandbytesStoresIt) {
  const int64_t n = 4096 * 4096;
  EXPECT_EQ(stored_weight_bytes(WeightFormat::bf16, 4096, 4096), 2 * n);
  EXPECT_EQ(stored_weight_bytes(WeightFormat::fp16, 4096, 4096), 2 * n);
  EXPECT_EQ(stored_weight_bytes(WeightFormat::fp32, 4096, 4096), 4 * n);
  // int8: a byte each and an fp32 scale per row (11008 rows of 4096).
  EXPECT_EQ(stored_weight_bytes(WeightFormat::int8, 11008, 4096), 11008 * 4096 + 4 * 11008);
  // nf4 with double quantization: n/2 packed, 262144 blocks of 64 with a byte each, 1024
  // nested blocks of 256 with an fp32 absmax each, an fp32 offset, the nested state's 1024-byte
  // copy of the dynamic map, the 64-byte code.
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 4096, 4096), n / 2 + 262144 + 4 * 1024 + 4 + 1024 + 64);
  EXPECT_EQ(stored_weight_bytes(WeightFormat::fp4, 4096, 4096), n / 2 + 262144 + 4 * 1024 + 4 + 1024 + 64);
  // Without: an fp32 absmax per block.
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 4096, 4096, false), n / 2 + 4 * 262144 + 64);
  // A ragged 3 x 5: 8 packed bytes, one block, one nested block.
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 3, 5), 8 + 1 + 4 + 4 + 1024 + 64);
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 3, 5, false), 8 + 4 + 64);
  EXPECT_THROW(stored_weight_bytes(WeightFormat::bf16, 0, 5), InputError);
  EXPECT_THROW(stored_weight_bytes(WeightFormat::bf16, int64_t{1} << 32, int64_t{1} << 31), InputError);
}

TEST(WeightFormatTest, BytesPerParameterAreTheLargeMatrixLimit) {
  EXPECT_EQ(stored_bytes_per_parameter(WeightFormat::bf16, 4096), 2.0);
  EXPECT_EQ(stored_bytes_per_parameter(WeightFormat::fp32, 4096), 4.0);
  EXPECT_EQ(stored_bytes_per_parameter(WeightFormat::int8, 4096), 1.0 + 1.0 / 1024);
  EXPECT_EQ(stored_bytes_per_parameter(WeightFormat::nf4, 4096), 0.515869140625);  // 4.127 bits, as QLoRA says
  EXPECT_EQ(stored_bytes_per_parameter(WeightFormat::nf4, 4096, false), 0.5625);
  // Exactly the matrix's bytes less its constants (offset, code, nested code) when the blocks divide it.
  const int64_t n = 4096 * 4096;
  EXPECT_EQ(static_cast<double>(stored_weight_bytes(WeightFormat::nf4, 4096, 4096) - 68 - 1024),
            stored_bytes_per_parameter(WeightFormat::nf4, 4096) * n);
  EXPECT_THROW(stored_bytes_per_parameter(WeightFormat::int8, 0), InputError);
}
