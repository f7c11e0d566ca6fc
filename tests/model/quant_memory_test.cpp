// A quantized base's bytes and the optimizers' state, against figures worked by hand from
// bitsandbytes 0.50 / PEFT 0.21 (docs/hf-stack-memory.md, "A quantized base").
#include "model/quant_memory.h"

#include <gtest/gtest.h>

#include "model/analytics.h"
#include "model/architecture.h"
#include "model/cost_model.h"
#include "model/error.h"
#include "model/hf_analytics.h"

namespace lorasim::model {
namespace {

// qwen3-1.7b (h 2048, i 6144, 28 layers, 16/8 heads of 128, vocabulary 151936, tied), r = 16 on
// all seven projections, hf-peft, NF4 with double quantization, prepared, checkpointing.
Workload qlora(const char* model = "qwen3-1.7b") {
  Workload w;
  w.arch = preset(model);
  w.lora.rank = 16;
  w.stack = StackSpec{};
  w.train.weight_format = WeightFormat::nf4;
  w.train.grad_ckpt = true;
  return w;
}

TEST(QuantMemoryTest, ANf4MatrixWithAndWithoutDoubleQuantization) {
  // 4096 x 4096: 8388608 packed bytes; 262144 blocks of 64. Double quantization: a uint8 absmax
  // each (262144), 1024 nested blocks of 256 with an fp32 absmax (4096), the fp32 offset (4), the
  // nested state's copy of the 256-entry fp32 dynamic map (1024), the 16-entry fp32 code (64).
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 4096, 4096, true), 8388608 + 262144 + 4096 + 4 + 1024 + 64);
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 4096, 4096, true), 8655940);
  // Without: an fp32 absmax per block (1048576) and the code.
  EXPECT_EQ(stored_weight_bytes(WeightFormat::nf4, 4096, 4096, false), 8388608 + 1048576 + 64);
}

TEST(QuantMemoryTest, Qwen3FrozenWeightsInNf4) {
  // Per block: q, o 2048 x 2048 -> 2097152 + 65536 + 1024 + 1092 = 2164804; k, v 1024 x 2048 ->
  // 1048576 + 32768 + 512 + 1092 = 1082948; gate, up, down 12582912 parameters -> 6291456 + 196608
  // + 3072 + 1092 = 6492228 (1092 = offset 4 + nested code 1024 + code 64). Block: 25972188; x 28 =
  // 727221264. The rest (tied embedding 311164928, norms 28 x 4352, final norm 2048 = 311288832
  // parameters): fp32 once prepared (1245155328), bf16 otherwise (622577664).
  Workload w = qlora();
  EXPECT_EQ(frozen_weight_bytes(w), 727221264 + 1245155328);
  EXPECT_EQ(static_memory(w).weights_bytes, 1972376592);
  w.train.kbit_prepare = false;
  EXPECT_EQ(frozen_weight_bytes(w), 727221264 + 622577664);
  // A float base: parameters x bytes, as before (1720574976 parameters in bf16).
  w.train.weight_format.reset();
  EXPECT_EQ(frozen_weight_bytes(w), 2 * count_params(w.arch, w.lora).base);
}

TEST(QuantMemoryTest, Qwen2BiasesComputeInTheComputeDtype) {
  // qwen2.5-0.5b's q/k/v biases (896 + 2 x 128 per layer, 24 layers = 27648) go back to bf16 on
  // the first forward of a Linear4bit; every other unquantized parameter stays fp32.
  Workload w = qlora("qwen2.5-0.5b");
  Workload no_bias = w;
  no_bias.arch.attention_bias = false;
  EXPECT_EQ(frozen_weight_bytes(w) - frozen_weight_bytes(no_bias), 2 * 27648);
}

TEST(QuantMemoryTest, Int8StoresAByteAndARowScale) {
  // LLM.int8: int8 weights and an fp32 SCB per output row. Block: q, o 4194304 + 8192; k, v
  // 2097152 + 4096; gate, up 12582912 + 24576; down 12582912 + 8192.
  Workload w = qlora();
  w.train.weight_format = WeightFormat::int8;
  const int64_t block = 2 * (4194304 + 8192) + 2 * (2097152 + 4096) + 2 * (12582912 + 24576) + (12582912 + 8192);
  EXPECT_EQ(frozen_weight_bytes(w), 28 * block + 4 * int64_t{311288832});
}

TEST(QuantMemoryTest, OptimizerStateByOptimizer) {
  // Adapter tensors per layer: 32768 elements x 9 (A of q,k,v,o,gate,up; B of q,o,down), 16384 x 2
  // (B of k, v), 98304 x 3 (A of down; B of gate, up): 622592 parameters, x 28 = 17432576.
  Workload w = qlora();
  EXPECT_EQ(optimizer_state_bytes(w), 8 * int64_t{17432576});  // adamw_torch: two fp32 moments
  w.train.optimizer = Optimizer::adamw_torch_fused;
  EXPECT_EQ(optimizer_state_bytes(w), 8 * int64_t{17432576});
  w.train.optimizer = Optimizer::paged_adamw_32bit;
  EXPECT_EQ(optimizer_state_bytes(w), 8 * int64_t{17432576});
  // 8-bit: 2 bytes + 8 per 256-element block. 32768 -> 65536 + 1024; 16384 -> 32768 + 512;
  // 98304 -> 196608 + 3072. Per layer 9 x 66560 + 2 x 33280 + 3 x 199680 = 1264640.
  w.train.optimizer = Optimizer::adamw_bnb_8bit;
  EXPECT_EQ(optimizer_state_bytes(w), 28 * 1264640);
  EXPECT_EQ(optimizer_paged_bytes(w), 0);
  // Paged: no qwen3-1.7b adapter tensor reaches 1e5 elements, so none is paged.
  w.train.optimizer = Optimizer::paged_adamw_8bit;
  EXPECT_EQ(optimizer_paged_bytes(w), 0);
  // llama-3.1-8b: down's A is 16 x 14336 = 229376 elements and gate's, up's B too: paged.
  Workload l = qlora("llama-3.1-8b");
  l.train.optimizer = Optimizer::paged_adamw_8bit;
  EXPECT_EQ(optimizer_paged_bytes(l), 32 * 3 * (2 * 229376 + 8 * 896));
  // A tensor under min_8bit_size keeps fp32 state: rank 1 on k and v of the tiny preset.
  Workload t = qlora("tiny");
  t.lora.rank = 1;
  t.train.optimizer = Optimizer::adamw_bnb_8bit;
  EXPECT_EQ(optimizer_state_bytes(t), 8 * count_params(t.arch, t.lora).trainable);
  EXPECT_THROW(parse_optimizer("adamw_8bit"), InputError);
  EXPECT_EQ(parse_optimizer("paged_adamw_8bit"), Optimizer::paged_adamw_8bit);
}

TEST(QuantMemoryTest, DequantizationBufferAndTraffic) {
  // The largest projection (gate, 6144 x 2048) dequantized into bf16 (25165824 bytes), with the
  // fp32 absmax dequantized and offset (2 x 4 x 196608).
  Workload w = qlora();
  EXPECT_EQ(dequant_buffer_bytes(w), 25165824 + 1572864);
  w.train.double_quant = false;
  EXPECT_EQ(dequant_buffer_bytes(w), 25165824);
  w.train.double_quant = true;
  // Two forward passes (checkpointing) and the backward dequantize every block's 25972188 bytes.
  EXPECT_EQ(dequantized_weight_bytes(w), 3.0 * 28 * 25972188);
  EXPECT_EQ(features(w, 1).dequant_weight_bytes, dequantized_weight_bytes(w));
  w.train.weight_format.reset();
  EXPECT_EQ(dequant_buffer_bytes(w), 0);
  EXPECT_EQ(dequantized_weight_bytes(w), 0);
}

TEST(QuantMemoryTest, PreparedBaseSavesFp32Activations) {
  // Autocast on, SDPA: norms 2 (4h + 4) = 16392; adapters' half copies 2 (S_in + 7r) = 2 x 18544 =
  // 37088; q/k norms 24 x 516 = 12384; SDPA in bf16 (2qd + 2kvd) x 2 + 4 nq = 12352; SwiGLU in fp32
  // 3 i x 4 = 73728. The bf16 model: 115080 (docs/hf-stack-memory.md), 36864 = 3 i x 2 less.
  Workload w = qlora();
  EXPECT_EQ(hf_block_saved_per_token(w, false), 16392 + 37088 + 12384 + 12352 + 73728);
  w.train.kbit_prepare = false;
  EXPECT_EQ(hf_block_saved_per_token(w, false), 115080);
  // Prepared: the checkpointed inputs are fp32 (L n h 4), the logits bf16 under autocast.
  w.train.kbit_prepare = true;
  const ActivationMemory m = hf_activation_memory(w, 1);
  const double n = 512, h = 2048, V = 151936;
  EXPECT_EQ(m.saved_bytes, n * (28 * h * 4 + (4 * h + 4) + 4 * V + 8));
  EXPECT_EQ(m.logits_buffer_bytes, n * V * 2);
  // Without autocast the LM head runs in fp32: fp32 logits.
  w.stack.autocast = false;
  EXPECT_EQ(activation_bytes(w).logits, 4);
  EXPECT_EQ(hf_activation_memory(w, 1).logits_buffer_bytes, n * V * 4);
}

TEST(QuantMemoryTest, Int8KeepsEachProjectionsInput) {
  // MatMul8bitLt saves its input: under autocast q/k/v's (4h, fp32 once prepared), gate/up's (4h),
  // down's (4i) and o's bf16 contiguous attention output (2 qd): 8192 + 8192 + 24576 + 4096 = 45056
  // more than the 4-bit base's 151944.
  Workload w = qlora();
  w.train.weight_format = WeightFormat::int8;
  EXPECT_EQ(hf_block_saved_per_token(w, false), 151944 + 45056);
  // Without preparation everything is bf16: 115080 + 2 (2h + i + qd) = 115080 + 24576.
  w.train.kbit_prepare = false;
  EXPECT_EQ(hf_block_saved_per_token(w, false), 115080 + 24576);
}

TEST(QuantMemoryTest, Qwen3QloraStaticTotal) {
  // Frozen 1972376592 + fp32 adapters and gradients 2 x 69730304 + AdamW 139460608 = 2251297808;
  // the stack's extras: the dequantization buffer 26738688, autocast's bf16 adapter copies
  // 2 x 17432576 = 34865152, the fp32 LM head's bf16 copy 2 x 151936 x 2048 = 622329856.
  const Workload w = qlora();
  EXPECT_EQ(static_memory(w).total(), 2251297808);
  EXPECT_EQ(hf_extra_static_bytes(w), 26738688.0 + 34865152.0 + 622329856.0);
  EXPECT_EQ(features(w, 1).static_bytes, 2935231504.0);
}

TEST(QuantMemoryTest, PreparedBaseMustCheckpoint) {
  Workload w = qlora();
  w.train.grad_ckpt = false;
  EXPECT_THROW(w.validate(), InputError);
  w.train.kbit_prepare = false;
  EXPECT_NO_THROW(w.validate());
}

TEST(QuantMemoryTest, AdaptersKeptInTheComputePrecisionHalveTheirBytes) {
  // TRL's SFTTrainer on a quantized base: 17,432,576 adapter parameters of qwen3-1.7b in bf16.
  // Weights and gradients 2 bytes each, torch AdamW's two moments in the parameter's dtype
  // (2 x 2 bytes); bitsandbytes' 32-bit state stays fp32 (8 bytes) whatever the dtype.
  Workload w = qlora();
  w.train.kbit_prepare = false;
  const StaticMemory fp32 = static_memory(w);
  EXPECT_EQ(fp32.adapter_bytes, 4 * int64_t{17432576});
  EXPECT_EQ(fp32.optimizer_bytes, 8 * int64_t{17432576});
  w.train.adapters_in_compute_precision = true;
  const StaticMemory half = static_memory(w);
  EXPECT_EQ(half.adapter_bytes, 2 * int64_t{17432576});
  EXPECT_EQ(half.gradient_bytes, 2 * int64_t{17432576});
  EXPECT_EQ(half.optimizer_bytes, 4 * int64_t{17432576});
  EXPECT_EQ(half.weights_bytes, fp32.weights_bytes);
  EXPECT_EQ(fp32.total() - half.total(), 8 * int64_t{17432576});
  w.train.optimizer = Optimizer::paged_adamw_32bit;
  EXPECT_EQ(optimizer_state_bytes(w), 8 * int64_t{17432576});
}

TEST(QuantMemoryTest, AdaptersInTheComputePrecisionSaveTheBlocksOwnTensors) {
  // qwen3-1.7b unprepared in NF4 (bf16 activations, autocast): with fp32 adapters every adapter
  // saves autocast's bf16 copy of its input, 2 (S_in + 7 r) = 2 (5 x 2048 + 2048 + 6144 + 112) =
  // 37088 bytes per token, and the block is the bf16 model's 115080. bf16 adapters cast nothing
  // (PEFT's _cast_input_dtype returns x when the dtypes match): lora_A saves the two norms'
  // outputs (shared by q/k/v and gate/up), the SwiGLU product and SDPA's saved output (o),
  // 2 (2048 + 2048 + 6144 + 112) = 20704: 16384 = 2 (3h + qd) less.
  Workload w = qlora();
  w.train.kbit_prepare = false;
  w.train.grad_ckpt = false;
  ASSERT_TRUE(w.stack.autocast);
  EXPECT_DOUBLE_EQ(hf_block_saved_per_token(w, false), 115080);
  const double fp32_static = hf_extra_static_bytes(w);
  w.train.adapters_in_compute_precision = true;
  EXPECT_DOUBLE_EQ(hf_block_saved_per_token(w, false), 115080 - 16384);
  // Nor does autocast cache a half copy of an adapter already in half precision: 2 x 17432576 less.
  EXPECT_DOUBLE_EQ(fp32_static - hf_extra_static_bytes(w), 2.0 * 17432576);
}

}  // namespace
}  // namespace lorasim::model
