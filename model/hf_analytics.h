// The analytic terms of the hf-peft stack: what Hugging Face Transformers' modeling code, PEFT's
// LoRA Linear and HF's causal-LM loss save for backward, move through memory and dispatch --
// the same quantities model/analytics.h gives for lorasim's own runner. docs/hf-stack-memory.md
// derives every memory term and says which backward formula needs each saved tensor.
#pragma once
#include <cstdint>

#include "model/analytics.h"
#include "model/workload.h"

namespace lorasim::model {

/// Bytes one decoder block saves for backward per token. `first`: block 0 without
/// checkpointing, whose input (the frozen embedding's output) needs no gradient.
double hf_block_saved_per_token(const Workload& w, bool first);
/// The same for layer `layer` (0-based): a local layer whose sdpa call gets a sliding-window mask
/// saves k and v repeated to every query head and the mask as an additive bias (s elements a token).
double hf_layer_saved_per_token(const Workload& w, int64_t layer, bool first);

/// The logits tile TRL's fused LM head projects into, one chunk of tokens by one chunk of the
/// vocabulary at a time: allocated while the loss runs, forward and backward. None unfused.
LossTile fused_head_tile(const Workload& w);

/// Bytes per token a block rebuilt for the backward (checkpointing) holds at its peak beyond what
/// it saves: PEFT's fp32 copy of the last adapted projection's input, under autocast (0 otherwise).
double rebuilt_cast_bytes(const Workload& w);

/// Activation memory of one micro-batch under the hf-peft stack (fields as in analytics.h):
/// saved = the blocks + the final norm + log-softmax's fp32 output and the labels;
/// logits = what the loss adds at the start of the backward beyond that (nll_loss's and
/// log_softmax's fp32 gradients: 8 bytes per logit); with checkpointing the rebuilt block.
ActivationMemory hf_activation_memory(const Workload& w, int64_t micro_batch);

/// Memory independent of the micro-batch that the stack holds beyond weights, adapters,
/// gradients and AdamW: autocast's cached half-precision copies of the fp32 adapter weights,
/// and, for an fp32 model under autocast, its per-call half copies of every frozen weight.
double hf_extra_static_bytes(const Workload& w);

/// The blocks' memory-bound traffic per token: lorasim's reference block plus what PEFT adds
/// per adapter (the input cast to the adapter's fp32, autocast's cast back, dropout, and
/// without autocast the fp32 LoRA path's promotion of the projection's output).
BlockTraffic hf_block_memory_traffic(const Workload& w);
double hf_memory_bound_bytes(const Workload& w, int64_t micro_batch);
/// The loss over the vocabulary: the fp32 upcast of the logits, log-softmax, nll and their
/// gradients, and the cast back (and Gemma 2's logit soft-cap, both ways).
double hf_loss_bytes(const Workload& w, int64_t micro_batch);

/// Operators dispatched per micro-batch: the reference block's plus PEFT's per-adapter casts
/// and dropout (the fitted per-operator host cost carries the Python overhead).
double hf_host_ops_per_micro_batch(const Workload& w);
double hf_recompute_ops_per_micro_batch(const Workload& w);

}  // namespace lorasim::model
