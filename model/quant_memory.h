// A quantized base and the optimizers QLoRA users pick, counted the way bitsandbytes 0.50, PEFT
// 0.21 and Transformers 5.17 allocate them (docs/hf-stack-memory.md, "A quantized base"): the
// frozen weights as stored, the optimizer's state, the dequantization buffer and what
// prepare_model_for_kbit_training changes in the activations' dtypes.
#pragma once
#include <cstdint>

#include "model/workload.h"

namespace lorasim::model {

/// Bytes of every frozen parameter of `w`: the seven projections of each block in the storage
/// format (stored_weight_bytes), everything else -- embeddings, the LM head, norms, biases, which
/// Transformers never quantizes -- in the compute precision, or in fp32 once
/// prepare_model_for_kbit_training has cast them. A float base: parameters x bytes per element.
/// Throws InputError naming the model when the count does not fit in int64.
int64_t frozen_weight_bytes(const Workload& w);

/// The optimizer's state over the adapters. torch's AdamW (fused or not) and bitsandbytes'
/// 32-bit AdamW: two fp32 moments, 8 bytes per parameter. bitsandbytes' 8-bit AdamW: two uint8
/// moments and two fp32 absmax per 256-element block of each adapter tensor (Optimizer2State.
/// init_state), and 8 bytes per parameter for a tensor under min_8bit_size = 4096 elements.
/// Paged state is counted as device memory (see optimizer_paged_bytes).
int64_t optimizer_state_bytes(const Workload& w);
/// Of optimizer_state_bytes, what a paged optimizer puts in CUDA unified memory instead of
/// PyTorch's allocator: the state of tensors of at least 1e5 elements (get_state_buffer). It
/// occupies the device until the driver pages it out under pressure, so lorasim counts it as
/// device memory; torch.cuda's allocator statistics do not show it. 0 for an unpaged optimizer.
int64_t optimizer_paged_bytes(const Workload& w);

/// The largest transient a quantized projection allocates: its weight dequantized into the
/// compute precision (bnb's dequant + F.linear path for more than 1536 tokens), plus for double
/// quantization the dequantized fp32 absmax (and its offset-added copy in the forward). One at a
/// time, forward and backward; the caching allocator keeps the block reserved. 0 for a float base.
double dequant_buffer_bytes(const Workload& w);

/// The stored bytes of the quantized projections that one micro-batch dequantizes: every block's
/// seven in each forward pass (two with checkpointing) and again in the backward, whose input
/// gradient through a frozen quantized weight dequantizes it anew. The regressor of
/// dequant_s_per_weight_byte; 0 for a float base. Independent of the micro-batch.
double dequantized_weight_bytes(const Workload& w);

/// The quantized projections' calls one micro-batch makes, counted as dequantized_weight_bytes
/// counts their bytes: each block's projections in each forward pass and in the backward. The
/// regressor of host_per_quant_call_s (bitsandbytes' Linear4bit / MatMul4Bit dispatch in Python
/// beyond an nn.Linear's); 0 for a float base.
double quantized_linear_calls(const Workload& w);

/// Bytes per element of the activations under the hf-peft stack. A float base: the compute
/// precision throughout. A prepared quantized base: fp32 norms make the residual stream, the
/// projections' outputs (bnb casts its result back to the input's dtype), SwiGLU and the loss's
/// input fp32; only attention runs in the compute precision under autocast.
struct ActivationBytes {
  double hidden = 2;     ///< residual stream, norms' outputs, projections' outputs, SwiGLU
  double attention = 2;  ///< SDPA's (or eager's) inputs, outputs and probabilities
  double logits = 2;     ///< the LM head's output (autocast runs the fp32 head in half precision)
};
ActivationBytes activation_bytes(const Workload& w);

}  // namespace lorasim::model
