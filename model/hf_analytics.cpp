// The hf-peft stack's analytic terms. The memory formulas are docs/hf-stack-memory.md's
// (checked to the byte on the CPU against what autograd saves: tests/python/test_saved_tensors.py).
#include "model/hf_analytics.h"

#include <algorithm>

#include "model/quant_memory.h"

namespace lorasim::model {
namespace {

// Bytes per element of what the adapters save: PEFT keeps the adapters of a half-precision
// model in fp32 and casts each adapter's input to fp32; autocast casts that copy back to half
// precision, and the half copy is what lora_A saves.
double adapter_saved_bytes(const Workload& w) {
  return w.stack.autocast ? 2.0 : 4.0;
}

// A dropout mask element: CUDA's native_dropout saves a bool mask.
constexpr double kDropoutMaskBytes = 1.0;

struct AdapterWidths {
  double in = 0;     ///< sum of the adapted projections' input widths (S_in)
  double out = 0;    ///< sum of their output widths
  double count = 0;  ///< adapted projections (|A|)
  double qkv_in = 0; ///< of `in`, the q/k/v projections' (block 0's inputs that need no grad)
};

AdapterWidths adapter_widths(const Workload& w) {
  AdapterWidths a;
  for (const Projection& p : block_projections(w.arch)) {
    if (!w.lora.has(p.target)) continue;
    a.in += static_cast<double>(p.in_features);
    a.out += static_cast<double>(p.out_features);
    a.count += 1;
    if (p.target == Target::q || p.target == Target::k || p.target == Target::v)
      a.qkv_in += static_cast<double>(p.in_features);
  }
  return a;
}

// LLM.int8's MatMul8bitLt keeps each frozen projection's input for its backward (ctx.tensors =
// (CAt, subA, A)) whenever it needs an input gradient: the block's own tensors, shared by q/k/v
// and by gate/up, and the contiguous attention output o reads. What an fp32 adapter already saves
// (fp32_plain: the same tensors) is not counted twice. Block 0 without checkpointing: q/k/v's
// input needs no gradient. The outlier columns (subA) depend on the weights and are left out.
double int8_saved_inputs(const Workload& w, bool first, bool fp32_plain) {
  const ActivationBytes act = activation_bytes(w);
  const double h = static_cast<double>(w.arch.hidden_size), i = static_cast<double>(w.arch.intermediate_size);
  const double qd = static_cast<double>(w.arch.q_dim());
  auto shared = [&](bool adapted) { return fp32_plain && adapted && w.stack.lora_dropout == 0; };
  const bool qkv = w.lora.has(Target::q) || w.lora.has(Target::k) || w.lora.has(Target::v);
  double bytes = 0;
  if (!first && !shared(qkv)) bytes += act.hidden * h;
  if (!shared(w.lora.has(Target::gate) || w.lora.has(Target::up))) bytes += act.hidden * h;
  if (!shared(w.lora.has(Target::down))) bytes += act.hidden * i;
  if (!fp32_plain) bytes += act.attention * qd;  // fp32_plain: SDPA's saved output, as for o's adapter
  return bytes;
}

// Whether transformers gives layer `layer`'s sdpa call an explicit mask: a local layer whose
// window does not cover the sequence (masking_utils skips the mask only while kv_length < window).
// With a mask, sdpa_attention_forward repeats k and v instead of passing enable_gqa.
bool sdpa_masked(const Workload& w, int64_t layer) {
  return w.stack.attn_impl == AttnImpl::sdpa && w.arch.is_local(layer) && w.train.seq_len >= w.arch.sliding_window;
}

double block_saved(const Workload& w, bool first, bool masked);

}  // namespace

double hf_block_saved_per_token(const Workload& w, bool first) { return block_saved(w, first, false); }

double hf_layer_saved_per_token(const Workload& w, int64_t layer, bool first) {
  return block_saved(w, first, sdpa_masked(w, layer));
}

namespace {

double block_saved(const Workload& w, bool first, bool masked) {
  const Architecture& a = w.arch;
  // A float base: every activation in the compute precision. A prepared quantized base: fp32
  // but for attention (model/quant_memory.h, activation_bytes).
  const ActivationBytes act = activation_bytes(w);
  const double e = act.hidden, ea_attn = act.attention;
  const double h = static_cast<double>(a.hidden_size), i = static_cast<double>(a.intermediate_size);
  const double qd = static_cast<double>(a.q_dim()), kvd = static_cast<double>(a.kv_dim());
  const double nq = static_cast<double>(a.num_heads), nkv = static_cast<double>(a.num_kv_heads);
  const double d = static_cast<double>(a.head_dim), s = static_cast<double>(w.train.seq_len);
  const double r = static_cast<double>(w.lora.rank);
  const AdapterWidths ad = adapter_widths(w);
  const bool fp32_plain = e == 4 && ea_attn == 4 && !w.stack.autocast;
  // RMSNorm (Gemma's (1 + w) one too) saves its fp32 input copy and the fp32 reciprocal RMS;
  // block 0's input norm saves nothing when the embedding output needs no gradient.
  const double norms = static_cast<double>(a.hidden_norms_per_block());
  double bytes = (first ? norms - 1 : norms) * (4 * h + 4);
  // lora_A saves its input and lora_B lora_A's output. In an fp32 model without autocast and
  // without dropout the input is the block's own tensor, shared by q/k/v and by gate/up.
  // Adapters kept in the compute precision (SFTTrainer on a 4-bit base) in a model whose
  // activations are that precision: PEFT's _cast_input_dtype returns x itself when the dtypes
  // match, and autocast casts nothing, so lora_A saves the block's own tensors too.
  const bool same_dtype = w.train.adapters_in_compute_precision && e == ea_attn &&
                          e == static_cast<double>(bytes_per_element(w.train.precision));
  double adapter_inputs = ad.in;
  if ((fp32_plain || same_dtype) && w.stack.lora_dropout == 0) {
    adapter_inputs = 0;
    if (w.lora.has(Target::q) || w.lora.has(Target::k) || w.lora.has(Target::v)) adapter_inputs += h;
    if (w.lora.has(Target::gate) || w.lora.has(Target::up)) adapter_inputs += h;
    if (w.lora.has(Target::down)) adapter_inputs += i;
    // o's input is the attention output SDPA saves anyway; eager makes a contiguous copy.
    if (w.lora.has(Target::o) && w.stack.attn_impl == AttnImpl::eager) adapter_inputs += qd;
  }
  bytes += adapter_saved_bytes(w) * (adapter_inputs + ad.count * r);
  if (w.stack.lora_dropout > 0) bytes += kDropoutMaskBytes * (ad.in - (first ? ad.qkv_in : 0.0));
  if (w.train.weight_storage() == WeightFormat::int8) bytes += int8_saved_inputs(w, first, fp32_plain);
  if (a.qk_norm) bytes += (nq + nkv) * (4 * d + 4);
  if (w.stack.attn_impl == AttnImpl::eager) {
    // QK^T saves q and the repeated k; PV the probabilities and the repeated v; softmax its fp32
    // output (bf16 models: plus the cast copy PV saves).
    const double kv_rep = a.num_kv_heads < a.num_heads ? qd : kvd;
    bytes += (qd + 2 * kv_rep) * ea_attn + nq * s * (ea_attn == 4 ? 4.0 : 4.0 + ea_attn);
    // Gemma 2's soft-cap of the scores, c tanh(scores / c): tanh saves its output.
    if (a.attn_logit_softcap > 0) bytes += nq * s * ea_attn;
  } else {
    // Fused attention: q, k, v (un-repeated, or repeated when a mask is passed), the output and
    // the fp32 log-sum-exp. transformers' sdpa path ignores Gemma 2's score soft-cap; flash-attn
    // applies it inside the kernel.
    const double kv_saved = masked && a.num_kv_heads < a.num_heads ? qd : kvd;
    bytes += (2 * qd + 2 * kv_saved) * ea_attn + 4 * nq;
    // A mask is converted to an additive bias in the query's dtype (b x 1 x s x s) at every call,
    // and the kernel saves that copy.
    if (masked) bytes += s * ea_attn;
  }
  // Phi-3 slices v out of qkv_proj's output (without a KV cache, as Trainer runs): where the fused
  // kernel saves that view (v not repeated), it keeps the whole q + 2 kv wide output alive. Eager's
  // matmul saves a contiguous copy instead, and RoPE's outputs are new tensors.
  const bool v_view_saved = w.stack.attn_impl != AttnImpl::eager && !(masked && a.num_kv_heads < a.num_heads);
  if (a.fused_qkv && v_view_saved) bytes += (qd + kvd) * e;
  // SiLU's (GeGLU: GELU's) input, its output and up; Phi-3's gate and up are halves of one
  // tensor, 2i wide, both saved.
  bytes += 3 * i * e;
  return bytes;
}

}  // namespace

LossTile fused_head_tile(const Workload& w) {
  if (!w.stack.fused_lm_head) return {};
  // TRL 1.16's chunked log-prob (trl/kernels/chunked_logprob.py) projects TOKEN_CHUNK_SIZE = 4096
  // tokens onto chunk_size = 32768 vocabulary entries at a time, in the compute precision, into
  // one buffer its forward and its backward each allocate.
  constexpr double kTokenChunk = 4096, kVocabChunk = 32768;
  return {std::min(static_cast<double>(w.arch.vocab_size), kVocabChunk) *
              activation_bytes(w).logits,
          kTokenChunk};
}

// PEFT casts each adapted projection's input to the adapters' dtype (_cast_input_dtype); under
// autocast the matmul casts that fp32 copy back and saves the half one, so the fp32 copy lives
// only while its projection runs. In a block rebuilt for the backward that moment comes last at
// the block's last adapted projection (down_proj), when every tensor the block saves is alive:
// the rebuilt block's peak holds that copy too. Bytes per token; 0 where no such copy is made
// (fp32 activations, adapters in the compute precision, no autocast: the copy is what is saved).
double rebuilt_cast_bytes(const Workload& w) {
  const ActivationBytes act = activation_bytes(w);
  if (!w.stack.autocast || w.train.adapters_in_compute_precision || act.hidden >= 4) return 0;
  double last_in = 0;
  for (const Projection& p : block_projections(w.arch))
    if (w.lora.has(p.target)) last_in = static_cast<double>(p.in_features);
  return 4 * last_in;
}

ActivationMemory hf_activation_memory(const Workload& w, int64_t micro_batch) {
  const Architecture& a = w.arch;
  const ActivationBytes act = activation_bytes(w);
  const double e = act.hidden;
  const double n = static_cast<double>(micro_batch) * static_cast<double>(w.train.seq_len);
  const double L = static_cast<double>(a.num_layers), h = static_cast<double>(a.hidden_size);
  const double V = static_cast<double>(a.vocab_size);
  const double block = hf_block_saved_per_token(w, false);
  // The final norm and the loss's saved tensors: log-softmax's fp32 output and int64 labels. TRL's
  // fused LM head instead keeps the head's input (the final norm's output) and per-token fp32
  // log-probs; its vocabulary-sized tiles are freed tile by tile.
  const bool fused = w.stack.fused_lm_head;
  // Gemma 2's soft-capped logits, c tanh(logits / c): tanh saves its output (compute precision).
  const double softcap = !fused && a.final_logit_softcap > 0 ? V * e : 0.0;
  const double outer = fused ? (4 * h + 4) + h * e + 4 + 8 : (4 * h + 4) + 4 * V + 8 + softcap;
  ActivationMemory m;
  if (w.train.grad_ckpt) {
    // Non-reentrant checkpointing keeps each block's input; one block is rebuilt at a time in
    // the backward, with its gradient buffers, after the loss's buffers are gone (which frees
    // the log-softmax output and the soft-cap's tanh the saved bytes include). The largest block.
    double largest = block;
    for (int64_t l = 0; l < a.num_layers; ++l) largest = std::max(largest, hf_layer_saved_per_token(w, l, false));
    m.saved_bytes = n * (L * h * e + outer);
    // At least a byte per row of the micro-batch, so that it stays positive (checkpointing is on)
    // and linear in the micro-batch, as model::Features marks it.
    const double seq = static_cast<double>(w.train.seq_len);
    m.recompute_bytes =
        n * std::max(1.0 / seq, largest + 2 * h * e + rebuilt_cast_bytes(w) - (fused ? 0.0 : 4 * V + softcap));
  } else if (a.local_layer_count() == 0) {
    m.saved_bytes = n * ((L - 1) * block + hf_block_saved_per_token(w, true) + outer);
  } else {
    double blocks = 0;
    for (int64_t l = 0; l < a.num_layers; ++l) blocks += hf_layer_saved_per_token(w, l, l == 0);
    m.saved_bytes = n * (blocks + outer);
  }
  // The start of the backward: nll_loss's gradient and log-softmax's input gradient, fp32 (the
  // fused head: the gradient of its input, fp32, and the one logits tile its backward reuses for
  // every chunk of tokens and vocabulary).
  m.logits_bytes = fused ? n * h * 4 : n * V * 8;
  // The loss's large transient blocks, whose slack and one unreusable copy the reserved line and
  // the worst case count: the half-precision logits, or the fused head's input and its tile.
  m.logits_buffer_bytes = fused ? n * h * e : n * V * act.logits;
  return m;
}

double hf_extra_static_bytes(const Workload& w) {
  // A quantized base: one projection's dequantized weight, whose block the allocator keeps.
  const double dequant = dequant_buffer_bytes(w);
  if (!w.stack.autocast) return dequant;
  const ParamCounts pc = count_params(w.arch, w.lora);
  // Autocast's cached half copies of fp32 adapters; adapters already in the compute precision
  // are not cast, so nothing is cached.
  double bytes = dequant + (w.train.adapters_in_compute_precision ? 0.0 : 2.0 * static_cast<double>(pc.trainable));
  if (w.train.kbit_prepared() && w.train.precision != Precision::fp32) {
    // The fp32 LM head under autocast: F.linear's half-precision copy of its weight, saved for
    // the input gradient (frozen weights are not autocast-cache leaves).
    bytes += 2.0 * static_cast<double>(w.arch.vocab_size) * static_cast<double>(w.arch.hidden_size);
  } else if (w.train.precision == Precision::fp32 && !w.train.quantized()) {
    double frozen_linear = 0;
    for (const Projection& p : block_projections(w.arch))
      frozen_linear += static_cast<double>(p.in_features) * static_cast<double>(p.out_features);
    bytes += 2.0 * (frozen_linear * static_cast<double>(w.arch.num_layers) +
                    static_cast<double>(w.arch.vocab_size) * static_cast<double>(w.arch.hidden_size));
  }
  return bytes;
}

BlockTraffic hf_block_memory_traffic(const Workload& w) {
  const ActivationBytes act = activation_bytes(w);
  // A prepared quantized base runs the block's elementwise work in fp32.
  Workload as_run = w;
  if (act.hidden == 4) as_run.train.precision = Precision::fp32;
  BlockTraffic t = block_memory_traffic(as_run);
  const double e = act.hidden;
  const AdapterWidths ad = adapter_widths(w);
  if (w.train.kbit_prepared() && e != act.attention) {
    // bnb's Linear4bit / Linear8bitLt casts its fp32 input to the compute dtype and its output
    // back (read 4, write c; read c, write 4), and the gradients the other way.
    const double c = static_cast<double>(bytes_per_element(w.train.precision));
    double in = 0, out = 0;
    for (const Projection& p : block_projections(w.arch)) {
      in += static_cast<double>(p.in_features);
      out += static_cast<double>(p.out_features);
    }
    t.forward_bytes_per_token += (4 + c) * (in + out);
    t.backward_bytes_per_token += (4 + c) * (in + out);
  }
  // PEFT's cast of each adapter's input to fp32 (read e, write 4), autocast's cast back
  // (read 4, write 2); their gradients run the other way in the backward.
  const double casts = (e == 4 ? 0.0 : e + 4) + (w.stack.autocast ? 6.0 : 0.0);
  t.forward_bytes_per_token += casts * ad.in;
  t.backward_bytes_per_token += casts * ad.in;
  if (w.stack.lora_dropout > 0) {
    // Forward: read the input, write the output and the mask; backward: read the gradient and
    // the mask, write the input gradient.
    const double x = w.stack.autocast ? 4.0 : 4.0;
    t.forward_bytes_per_token += (2 * x + kDropoutMaskBytes) * ad.in;
    t.backward_bytes_per_token += (2 * x + kDropoutMaskBytes) * ad.in;
  }
  if (!w.stack.autocast && e != 4) {
    // Without autocast the adapter path runs in fp32: lora_B's output, its scaled copy and the
    // sum with the frozen output are fp32 (then cast back), both ways.
    t.forward_bytes_per_token += (3 * 4 + 4 + e) * ad.out;
    t.backward_bytes_per_token += (3 * 4 + 4 + e) * ad.out;
  }
  return t;
}

double hf_memory_bound_bytes(const Workload& w, int64_t micro_batch) {
  const double n = static_cast<double>(micro_batch) * static_cast<double>(w.train.seq_len);
  const BlockTraffic t = hf_block_memory_traffic(w);
  const double forward_passes = w.train.grad_ckpt ? 2.0 : 1.0;
  return n * static_cast<double>(w.arch.num_layers) *
         (forward_passes * t.forward_bytes_per_token + t.backward_bytes_per_token);
}

double hf_loss_bytes(const Workload& w, int64_t micro_batch) {
  const double e = activation_bytes(w).logits;
  const double n = static_cast<double>(micro_batch) * static_cast<double>(w.train.seq_len);
  // Upcast (read e, write 4), log-softmax (read 4, write 4), nll (read 4); backward: nll's
  // gradient (write 4), log-softmax's (read 8, write 4), the cast back (read 4, write e). The
  // fused head keeps its tiles on chip: only the head's input and output per token move.
  if (w.stack.fused_lm_head) return n * static_cast<double>(w.arch.hidden_size) * 4 * e;
  // fp32 logits (a prepared quantized base without autocast): neither cast runs.
  const double casts = e == 4 && w.train.precision != Precision::fp32 ? -8.0 : 0.0;
  // Gemma 2's soft-cap c tanh(logits / c): three elementwise passes forward (6e); backward the
  // product's gradient (2e), tanh's from its saved output (3e) and the quotient's (2e).
  const double softcap = w.arch.final_logit_softcap > 0 ? 13 * e : 0.0;
  return n * static_cast<double>(w.arch.vocab_size) * (2 * e + 36 + casts + softcap);
}

namespace {
// PEFT's extra operators per adapter in the forward: the input cast, the cast of the result
// back, and dropout when on.
double adapter_extra_forward_ops(const Workload& w) {
  return static_cast<double>(adapted_projections(w.arch, w.lora)) * (2.0 + (w.stack.lora_dropout > 0 ? 1.0 : 0.0));
}
// bitsandbytes' extra kernels per frozen projection in the forward: the input cast, the output
// cast, and the dequantization (double quantization: the absmax's, its offset, the weight's;
// plain: the weight's). An approximation the fitted per-operator host cost absorbs.
double quant_extra_forward_ops(const Workload& w) {
  if (!w.train.quantized()) return 0;
  const bool nested = w.train.double_quant && w.train.weight_storage() != WeightFormat::int8;
  return static_cast<double>(block_projections(w.arch).size()) * (nested ? 5.0 : 3.0);
}
// Eager attention dispatches one by one what SDPA runs as one kernel: the key's transpose, the
// two matmuls, the scale, the mask's add, the fp32 softmax and its cast back, dropout, and
// repeat_kv's expand and reshape of K and V where heads are grouped; soft-capping adds a division,
// a tanh and a product. Counted from the dispatches themselves (bench/hf/count_ops.py: 53 aten
// operators more per layer over forward and backward, 61 with soft-capping, where a qwen3 layer
// dispatches 490 that the host-op count of analytics.cpp counts as 310) rather than one by one,
// because their backward dispatches more than kBackwardPerForward per forward operator.
constexpr double kEagerAttentionForwardOps = 13;
constexpr double kAttnSoftcapForwardOps = 2;
double attention_extra_forward_ops(const Workload& w) {
  if (w.stack.attn_impl != AttnImpl::eager) return 0;
  return kEagerAttentionForwardOps + (w.arch.attn_logit_softcap > 0 ? kAttnSoftcapForwardOps : 0.0);
}
double extra_forward_ops(const Workload& w) {
  return adapter_extra_forward_ops(w) + quant_extra_forward_ops(w) + attention_extra_forward_ops(w);
}
// The backward dispatches about 1.5 operators per forward operator (model/analytics.cpp).
constexpr double kBackwardPerForward = 1.5;
}  // namespace

double hf_host_ops_per_micro_batch(const Workload& w) {
  const double extra = extra_forward_ops(w) * static_cast<double>(w.arch.num_layers);
  return host_ops_per_micro_batch(w) + extra * ((w.train.grad_ckpt ? 2.0 : 1.0) + kBackwardPerForward);
}

double hf_recompute_ops_per_micro_batch(const Workload& w) {
  if (!w.train.grad_ckpt) return 0.0;
  return recompute_ops_per_micro_batch(w) + extra_forward_ops(w) * static_cast<double>(w.arch.num_layers);
}

}  // namespace lorasim::model
