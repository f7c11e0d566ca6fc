// What follows analytically from a workload: parameter counts, FLOPs, bytes, operator
// counts and memory terms. Exact where the maths is exact (parameters, FLOPs, static
// bytes); activation and traffic terms describe lorasim's reference implementation
// (calibrate/) and are scaled by fitted coefficients in the cost model.
#pragma once
#include <cstdint>
#include <vector>

#include "model/workload.h"

namespace lorasim::model {

/// One linear projection of a decoder block: y = x W^T, W is out x in.
struct Projection {
  Target target;
  int64_t in_features;
  int64_t out_features;
};
/// The linear projections of one block of `arch`, in kAllTargets order: seven, or four when Phi-3
/// fuses q/k/v into qkv_proj (its Target is q) and gate/up into gate_up_proj (Target gate). A fused
/// projection is adapted when its parts are (check_targets makes that all of them or none).
std::vector<Projection> block_projections(const Architecture& arch);
/// Throws InputError when `lora` adapts part of a fused projection (q but not k, ...).
void check_targets(const Architecture& arch, const LoraSpec& lora);
/// The projections of one block that carry an adapter.
int64_t adapted_projections(const Architecture& arch, const LoraSpec& lora);

struct ParamCounts {
  int64_t embedding = 0;       ///< vocab x hidden
  int64_t lm_head = 0;         ///< 0 when tied to the embedding
  int64_t per_layer = 0;       ///< frozen parameters of one decoder block
  int64_t final_norm = 0;      ///< the last RMSNorm
  int64_t outside_decoder = 0; ///< frozen weights a text fine-tune never runs (Gemma 3's vision tower)
  int64_t base = 0;            ///< all frozen parameters
  int64_t lora_per_layer = 0;  ///< adapter parameters of one block
  int64_t trainable = 0;       ///< all adapter parameters
  int64_t lora_tensors = 0;    ///< adapter tensors (A and B per adapted projection)
};
/// Throws InputError naming the model when a count does not fit in int64, or as check_targets.
ParamCounts count_params(const Architecture& arch, const LoraSpec& lora);

/// Floating-point operations of one forward + backward pass over a micro-batch
/// (one multiply-add = 2 FLOPs). Frozen weights get no weight gradient; with gradient
/// checkpointing each block's forward runs twice.
struct Flops {
  double gemm = 0;       ///< frozen projections of the decoder blocks
  double head = 0;       ///< the LM head (vocab x hidden), forward and input gradient
  double lora = 0;       ///< adapter matmuls (forward, input and weight gradients)
  double attention = 0;  ///< Q K^T and P V over the full s x s square, forward and backward
  double total() const { return gemm + head + lora + attention; }
};
Flops flops_per_micro_batch(const Workload& w, int64_t micro_batch);

/// Memory that does not depend on the micro-batch.
struct StaticMemory {
  int64_t weights_bytes = 0;    ///< frozen base weights as stored (model/quant_memory.h)
  int64_t adapter_bytes = 0;    ///< fp32 adapter weights
  int64_t gradient_bytes = 0;   ///< fp32 adapter gradients
  int64_t optimizer_bytes = 0;  ///< the optimizer's state (AdamW: two fp32 moments per trainable parameter)
  int64_t total() const { return weights_bytes + adapter_bytes + gradient_bytes + optimizer_bytes; }
};
/// Throws InputError naming the model when a byte count does not fit in int64.
StaticMemory static_memory(const Workload& w);

/// A fixed-size buffer a loss reuses for every chunk of its tokens: bytes per token it holds and
/// the tokens it holds at most (none: 0).
struct LossTile {
  double bytes_per_token = 0;
  double max_tokens = 0;
};

/// Memory that grows with the micro-batch: what autograd saves for backward, and the
/// transient logits/loss buffers. Bytes for the whole micro-batch.
struct ActivationMemory {
  double saved_bytes = 0;            ///< tensors saved for backward across all blocks
  double attention_score_bytes = 0;  ///< b x heads x s x s scores, kept only by unfused attention
  double logits_bytes = 0;           ///< logits, their fp32 copy, log-softmax and gradients
  /// With gradient checkpointing: one block's activations, rebuilt during the backward pass.
  /// They are alive only after the loss's buffers are freed, so the peak holds one or the
  /// other (peak_memory takes the larger); without checkpointing, 0 (they are in saved_bytes).
  double recompute_bytes = 0;
  /// One logits tensor in the compute precision (b x s x vocab elements): the largest single
  /// transient buffer, and the size of the allocator slack seen in a fresh process.
  double logits_buffer_bytes = 0;
};
ActivationMemory activation_memory(const Workload& w, int64_t micro_batch);

/// Memory traffic of one decoder block's memory-bound work (norms, RoPE, attention I/O,
/// SwiGLU, residuals, the adapters' elementwise work and skinny GEMMs), bytes per token.
struct BlockTraffic {
  double forward_bytes_per_token = 0;
  double backward_bytes_per_token = 0;
};
BlockTraffic block_memory_traffic(const Workload& w);

/// Bytes that the decoder blocks' memory-bound operators read and write in one forward +
/// backward of a micro-batch (with checkpointing, the recomputed forward too).
double memory_bound_bytes(const Workload& w, int64_t micro_batch);
/// Bytes the loss reads and writes over the vocabulary (cast, log-softmax, its gradient).
double loss_bytes(const Workload& w, int64_t micro_batch);

/// Operators the host dispatches for one micro-batch (forward, backward and, with
/// checkpointing, recompute). Independent of the micro-batch size.
double host_ops_per_micro_batch(const Workload& w);
/// Of those, the forward operators that gradient checkpointing adds (0 without it).
double recompute_ops_per_micro_batch(const Workload& w);

// --- The frozen weights' bytes by storage format (counted by the cost model from issue 18) ---

/// Bytes one frozen weight matrix of `rows` x `cols` (out x in features, n = rows x cols
/// parameters) takes stored in `f`, as bitsandbytes stores it (bitsandbytes/functional.py):
///   bf16, fp16: 2n; fp32: 4n;
///   int8 (LLM.int8, int8_vectorwise_quant): n + 4 rows, an fp32 absmax per output row;
///   nf4, fp4 (quantize_4bit, blocksize 64): ceil(n/2) packed bytes, a 16-entry fp32 code (64
///   bytes), and per block of 64 an absmax: fp32 (4 bytes) plainly, or with double quantization
///   (compress_statistics, as QLoRA does) one byte, plus an fp32 absmax per 256 of those bytes
///   (the nested quantize_blockwise's blocksize), one fp32 offset and the nested state's own
///   copy of the 256-entry fp32 dynamic map (`code.to(device, copy=True)`: 1024 bytes) per matrix.
/// Throws InputError when the count does not fit in int64.
int64_t stored_weight_bytes(WeightFormat f, int64_t rows, int64_t cols, bool double_quant = true);
/// The bytes per parameter of a matrix with `cols` columns and many rows, per-matrix constants
/// left out: 2, 4, 1 + 4/cols (int8), 0.5 + 1/64 + 4/(64 x 256) = 0.515869140625 with double
/// quantization and 0.5 + 4/64 = 0.5625 without (nf4, fp4).
double stored_bytes_per_parameter(WeightFormat f, int64_t cols, bool double_quant = true);

}  // namespace lorasim::model
