// Analytic counts for a LoRA workload. See docs/cost-model.md for the derivations.
#include "model/analytics.h"

#include <algorithm>

#include "model/checked.h"
#include "model/error.h"
#include "model/quant_memory.h"

namespace lorasim::model {
namespace {

// One message for every count that does not fit: lorasim counts in int64, and a wrapped count
// would be printed as a (negative) result.
InputError too_large(const std::string& model, const char* what) {
  return InputError("model '" + model + "' is too large to simulate: its " + what +
                    " does not fit in a 64-bit integer (check hidden_size, intermediate_size, "
                    "num_hidden_layers, num_attention_heads, head_dim and vocab_size)");
}

}  // namespace

std::vector<Projection> block_projections(const Architecture& a) {
  std::vector<Projection> p;
  if (a.fused_qkv) {
    p.push_back({Target::q, a.hidden_size, a.q_dim() + 2 * a.kv_dim()});  // Phi-3's qkv_proj
  } else {
    p.push_back({Target::q, a.hidden_size, a.q_dim()});
    p.push_back({Target::k, a.hidden_size, a.kv_dim()});
    p.push_back({Target::v, a.hidden_size, a.kv_dim()});
  }
  p.push_back({Target::o, a.q_dim(), a.hidden_size});
  if (a.fused_gate_up) {
    p.push_back({Target::gate, a.hidden_size, 2 * a.intermediate_size});  // Phi-3's gate_up_proj
  } else {
    p.push_back({Target::gate, a.hidden_size, a.intermediate_size});
    p.push_back({Target::up, a.hidden_size, a.intermediate_size});
  }
  p.push_back({Target::down, a.intermediate_size, a.hidden_size});
  return p;
}

void check_targets(const Architecture& a, const LoraSpec& lora) {
  // A fused module carries one adapter: PEFT adapts qkv_proj whole or not at all.
  auto all_or_none = [&](std::initializer_list<Target> parts, const char* module, const char* names) {
    size_t n = 0;
    for (Target t : parts) n += lora.has(t) ? 1 : 0;
    if (n != 0 && n != parts.size())
      throw InputError("model '" + a.name + "' (" + a.model_type + ") fuses " + names + " into one " + module +
                           ": adapt " + module + " whole (LoRA targets " + module + " or all) or leave all of " +
                           names + " out, got " + lora.targets_string(),
                       "lora_targets");
  };
  if (a.fused_qkv) all_or_none({Target::q, Target::k, Target::v}, "qkv_proj", "q, k and v");
  if (a.fused_gate_up) all_or_none({Target::gate, Target::up}, "gate_up_proj", "gate and up");
}

int64_t adapted_projections(const Architecture& a, const LoraSpec& lora) {
  int64_t n = 0;
  for (const Projection& p : block_projections(a)) n += lora.has(p.target) ? 1 : 0;
  return n;
}

ParamCounts count_params(const Architecture& a, const LoraSpec& lora) {
  check_targets(a, lora);
  Checked k;
  const int64_t q_dim = k.mul(a.num_heads, a.head_dim), kv_dim = k.mul(a.num_kv_heads, a.head_dim);
  if (k.overflowed) throw too_large(a.name, "attention width (heads x head_dim)");
  ParamCounts c;
  c.embedding = k.mul(a.vocab_size, a.hidden_size);
  c.lm_head = a.tie_embeddings ? 0 : c.embedding;
  // Input and post-attention RMSNorm weights (Gemma: pre- and post-feedforward ones too).
  int64_t layer = k.mul(a.hidden_norms_per_block(), a.hidden_size);
  if (a.qk_norm) layer = k.add(layer, k.mul(2, a.head_dim));
  if (a.attention_bias) layer = k.add(layer, k.add(q_dim, k.mul(2, kv_dim)));
  for (const auto& p : block_projections(a)) {
    layer = k.add(layer, k.mul(p.in_features, p.out_features));
    if (lora.has(p.target)) {
      c.lora_per_layer = k.add(c.lora_per_layer, k.mul(lora.rank, k.add(p.in_features, p.out_features)));
      c.lora_tensors = k.add(c.lora_tensors, k.mul(2, a.num_layers));
    }
  }
  c.per_layer = layer;
  c.final_norm = a.hidden_size;
  c.outside_decoder = a.extra_frozen_params;
  c.base = k.add(k.add(c.embedding, c.lm_head), k.add(k.mul(a.num_layers, c.per_layer), c.final_norm));
  c.base = k.add(c.base, c.outside_decoder);
  c.trainable = k.mul(a.num_layers, c.lora_per_layer);
  if (k.overflowed) throw too_large(a.name, "parameter count");
  return c;
}

Flops flops_per_micro_batch(const Workload& w, int64_t micro_batch) {
  const Architecture& a = w.arch;
  const double n = static_cast<double>(micro_batch) * w.train.seq_len;  // tokens
  const double s = static_cast<double>(w.train.seq_len);
  const double L = static_cast<double>(a.num_layers);
  // Forward passes through the blocks: one, or two when checkpointing recomputes them.
  const double fwd_passes = w.train.grad_ckpt ? 2.0 : 1.0;

  double frozen_weights = 0, lora_width = 0;  // per block
  for (const auto& p : block_projections(a)) {
    frozen_weights += static_cast<double>(p.in_features) * p.out_features;
    if (w.lora.has(p.target)) lora_width += static_cast<double>(p.in_features + p.out_features);
  }
  Flops f;
  // Frozen GEMM: forward 2nW per pass, backward input gradient 2nW, no weight gradient.
  const double head = static_cast<double>(a.vocab_size) * a.hidden_size;
  f.gemm = L * (2 * fwd_passes + 2) * n * frozen_weights;
  f.head = 4 * n * head;
  // LoRA x A^T B^T: forward 2nr(in+out) per pass; backward 4nr(in+out) (input and weight grads).
  f.lora = L * (2 * fwd_passes + 4) * n * w.lora.rank * lora_width;
  // Attention: QK^T and PV are 2*b*H*s*keys*d each forward; backward is twice the forward. Every
  // key is computed (masked ones too) except by flash-attn, which skips the keys outside a local
  // layer's window: there keys = min(s, window).
  const double attn_fwd = 4.0 * micro_batch * a.num_heads * s * s * a.head_dim;
  f.attention = L * (fwd_passes + 2) * attn_fwd;
  const int64_t local = a.local_layer_count();
  if (local > 0 && w.stack.attn_impl == AttnImpl::flash_attention_2 && a.sliding_window < w.train.seq_len) {
    const double skipped_keys = s - static_cast<double>(a.sliding_window);
    f.attention -= static_cast<double>(local) * (fwd_passes + 2) * 4.0 * micro_batch * a.num_heads * s *
                   skipped_keys * a.head_dim;
  }
  return f;
}

StaticMemory static_memory(const Workload& w) {
  const ParamCounts c = count_params(w.arch, w.lora);
  Checked k;
  StaticMemory m;
  m.weights_bytes = frozen_weight_bytes(w);     // each throws naming the model
  m.adapter_bytes = k.mul(c.trainable, w.train.adapter_element_bytes());
  m.gradient_bytes = k.mul(c.trainable, w.train.adapter_element_bytes());
  m.optimizer_bytes = optimizer_state_bytes(w);
  k.add(k.add(m.weights_bytes, m.adapter_bytes), k.add(m.gradient_bytes, m.optimizer_bytes));  // total()
  if (k.overflowed) throw too_large(w.arch.name, "weight and optimizer bytes");
  return m;
}

namespace {

// Elements one block saves for backward per token (in the compute precision), and fp32
// scalars per token (RMSNorm reciprocal RMS, attention log-sum-exp). Follows calibrate/'s
// block: two RMSNorms saving input and output, q/k norms, RoPE outputs, attention output
// and its contiguous copy for o_proj, SwiGLU's gate, up, silu(gate) and product, and the
// rank-r output of every adapter's A.
struct BlockSaved {
  double elements;
  double fp32_scalars;
};

BlockSaved block_saved_per_token(const Workload& w) {
  const Architecture& a = w.arch;
  const double h = static_cast<double>(a.hidden_size), i = static_cast<double>(a.intermediate_size);
  const double qd = static_cast<double>(a.q_dim()), kvd = static_cast<double>(a.kv_dim());
  double e = 2 * h * static_cast<double>(a.hidden_norms_per_block());  // norms: input and output each
  e += 3 * qd + 2 * kvd;           // rotated q, k; v; attention output; its copy for o_proj
  if (a.qk_norm) e += qd + kvd;    // inputs of the q/k norms
  e += 4 * i;                      // gate, up, silu(gate), silu(gate)*up
  e += static_cast<double>(w.lora.rank) * static_cast<double>(adapted_projections(a, w.lora));
  // Each norm's rstd, per-head log-sum-exp.
  double f32 = static_cast<double>(a.hidden_norms_per_block()) + static_cast<double>(a.num_heads);
  if (a.qk_norm) f32 += static_cast<double>(a.num_heads + a.num_kv_heads);
  return {e, f32};
}

}  // namespace

ActivationMemory activation_memory(const Workload& w, int64_t micro_batch) {
  const Architecture& a = w.arch;
  const double eb = static_cast<double>(bytes_per_element(w.train.precision));
  const double s = static_cast<double>(w.train.seq_len);
  const double n = static_cast<double>(micro_batch) * s;
  const double L = static_cast<double>(a.num_layers);
  const BlockSaved blk = block_saved_per_token(w);
  const double block_bytes_per_token = blk.elements * eb + blk.fp32_scalars * 4;
  // Embedding output, final norm input and output.
  const double outer_per_token = 3.0 * a.hidden_size * eb;
  const double scores_per_block = static_cast<double>(micro_batch) * a.num_heads * s * s * eb;

  ActivationMemory m;
  if (w.train.grad_ckpt) {
    // Each block keeps only its input; one block at a time is recomputed in full, after the
    // loss's buffers are gone (and so are its unfused scores).
    m.saved_bytes = n * (L * a.hidden_size * eb + outer_per_token);
    m.recompute_bytes = n * block_bytes_per_token;
    m.attention_score_bytes = scores_per_block;
  } else {
    m.saved_bytes = n * (L * block_bytes_per_token + outer_per_token);
    m.attention_score_bytes = L * scores_per_block;
  }
  // Logits in the compute precision, an fp32 copy for the loss (none when already fp32),
  // fp32 log-softmax saved for backward, its fp32 gradient and the gradient cast back.
  const double upcast = eb == 4 ? 0.0 : 4.0;
  m.logits_bytes = n * static_cast<double>(a.vocab_size) * (eb + upcast + 4 + 4 + eb);
  m.logits_buffer_bytes = n * static_cast<double>(a.vocab_size) * eb;
  return m;
}

BlockTraffic block_memory_traffic(const Workload& w) {
  const Architecture& a = w.arch;
  const double e = static_cast<double>(bytes_per_element(w.train.precision));
  const double h = static_cast<double>(a.hidden_size), i = static_cast<double>(a.intermediate_size);
  const double qd = static_cast<double>(a.q_dim()), kvd = static_cast<double>(a.kv_dim());
  // Bytes read + written per element by each elementwise operator of calibrate/'s block and
  // by its backward, counting every kernel's inputs once and its output once. RMSNorm keeps
  // its statistics in fp32 (f); a cast to or from fp32 moves e + f bytes (none in fp32).
  const double f = 4, cast = e == f ? 0.0 : e + f;
  BlockTraffic t;
  // RMSNorm: cast in, pow, mean, x * rsqrt, cast out, times the weight. Backward: the
  // weight product, the cast, x * rsqrt's two gradients (one through a row reduction),
  // pow's, their sum, and the cast back.
  const double norm_fwd = 2 * cast + 5 * f + 2 * e, norm_bwd = 2 * cast + 13 * f + 2 * e;
  const double norms = static_cast<double>(a.hidden_norms_per_block());
  t.forward_bytes_per_token += norm_fwd * norms * h;
  t.backward_bytes_per_token += norm_bwd * norms * h;
  if (a.qk_norm) {
    t.forward_bytes_per_token += norm_fwd * (qd + kvd);
    t.backward_bytes_per_token += norm_bwd * (qd + kvd);
  }
  // RoPE, x * cos + cat(-x2, x1) * sin: 10 forward; backward 15 (the slices' gradients are
  // written whole, and three gradients are summed).
  t.forward_bytes_per_token += 10 * e * (qd + kvd);
  t.backward_bytes_per_token += 15 * e * (qd + kvd);
  // Attention: the fused kernel reads q, k, v and writes the output; its backward reads
  // those and the output gradient and writes three gradients. The output's layout copy for
  // o_proj, both ways.
  t.forward_bytes_per_token += e * (2 * qd + 2 * kvd) + 2 * e * qd;
  t.backward_bytes_per_token += e * (4 * qd + 4 * kvd) + 2 * e * qd;
  // SwiGLU silu(gate) * up: 5 forward, 9 backward per intermediate element.
  t.forward_bytes_per_token += 5 * e * i;
  t.backward_bytes_per_token += 9 * e * i;
  // Two residual adds; backward sums the gradients where the stream forks.
  t.forward_bytes_per_token += 6 * e * h;
  t.backward_bytes_per_token += 6 * e * h;
  // Each adapter. Forward: the rank-r GEMM reads the input, the delta is written, scaled
  // and added. Backward: the delta's gradient is scaled and read by two GEMMs, the input
  // is read again, and the input gradient is written and summed with the frozen path's.
  for (const auto& p : block_projections(a)) {
    if (!w.lora.has(p.target)) continue;
    const double in = static_cast<double>(p.in_features), out = static_cast<double>(p.out_features);
    t.forward_bytes_per_token += e * (in + 6 * out);
    t.backward_bytes_per_token += e * (5 * in + 4 * out);
  }
  return t;
}

double memory_bound_bytes(const Workload& w, int64_t micro_batch) {
  const double n = static_cast<double>(micro_batch) * w.train.seq_len;
  const BlockTraffic t = block_memory_traffic(w);
  // Checkpointing runs every block's forward a second time, inside the backward pass.
  const double forward_passes = w.train.grad_ckpt ? 2.0 : 1.0;
  return n * static_cast<double>(w.arch.num_layers) *
         (forward_passes * t.forward_bytes_per_token + t.backward_bytes_per_token);
}

double loss_bytes(const Workload& w, int64_t micro_batch) {
  const double eb = static_cast<double>(bytes_per_element(w.train.precision));
  const double n = static_cast<double>(micro_batch) * w.train.seq_len;
  // Cross-entropy over the vocabulary: cast, log-softmax, its gradient (fp32).
  return n * static_cast<double>(w.arch.vocab_size) * (2 * eb + 16);
}

namespace {
double block_forward_ops(const Workload& w) {
  const Architecture& a = w.arch;
  // Forward operators of one block in calibrate/'s implementation: two RMSNorms (8 each),
  // seven projections, head reshapes (6), RoPE (14), attention (3), output reshape (2),
  // residual adds (2), SwiGLU (2); q/k norms 16 more; each adapter 6 (two casts, two
  // matmuls, scale, add).
  double fwd = 8.0 * static_cast<double>(a.hidden_norms_per_block()) + 6 + 14 + 3 + 2 + 2 + 2;
  fwd += static_cast<double>(block_projections(a).size());
  if (a.qk_norm) fwd += 16;
  return fwd + 6.0 * static_cast<double>(adapted_projections(a, w.lora));
}
}  // namespace

double host_ops_per_micro_batch(const Workload& w) {
  const Architecture& a = w.arch;
  const double fwd = block_forward_ops(w);
  // Backward dispatches about 1.5 operators per forward operator; checkpointing adds a
  // second forward.
  const double per_block = fwd * (w.train.grad_ckpt ? 3.5 : 2.5);
  // Embedding, final norm, LM head, loss, and the accumulation bookkeeping.
  const double outer = (1 + 8 + 1 + 6) * 2.5;
  return static_cast<double>(a.num_layers) * per_block + outer;
}

double recompute_ops_per_micro_batch(const Workload& w) {
  return w.train.grad_ckpt ? static_cast<double>(w.arch.num_layers) * block_forward_ops(w) : 0.0;
}

// --- The frozen weights' bytes by storage format -------------------------------------

namespace {
constexpr int64_t kQuantBlock = 64;          // quantize_4bit's default blocksize
constexpr int64_t kNestedBlock = 256;        // the double quantization of the absmax values
constexpr int64_t kFourBitCodeBytes = 16 * 4;  // the NF4 / FP4 code, 16 fp32 values per matrix
constexpr int64_t kNestedCodeBytes = 256 * 4;  // the nested state's copy of the 8-bit dynamic map
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
}  // namespace

int64_t stored_weight_bytes(WeightFormat f, int64_t rows, int64_t cols, bool double_quant) {
  if (rows <= 0 || cols <= 0)
    throw InputError("a weight matrix needs positive dimensions, got " + std::to_string(rows) + " x " +
                     std::to_string(cols));
  Checked k;
  const int64_t n = k.mul(rows, cols);
  int64_t bytes = 0;
  switch (f) {
    case WeightFormat::bf16:
    case WeightFormat::fp16: bytes = k.mul(n, 2); break;
    case WeightFormat::fp32: bytes = k.mul(n, 4); break;
    case WeightFormat::int8: bytes = k.add(n, k.mul(rows, 4)); break;
    case WeightFormat::nf4:
    case WeightFormat::fp4: {
      const int64_t blocks = ceil_div(n, kQuantBlock);
      const int64_t absmax =
          double_quant ? blocks + 4 * ceil_div(blocks, kNestedBlock) + 4 + kNestedCodeBytes : 4 * blocks;
      bytes = k.add(k.add(ceil_div(n, 2), absmax), kFourBitCodeBytes);
      break;
    }
  }
  if (k.overflowed)
    throw InputError("a " + std::to_string(rows) + " x " + std::to_string(cols) + " weight matrix in " +
                     weight_format_name(f) + " is beyond a 64-bit byte count");
  return bytes;
}

double stored_bytes_per_parameter(WeightFormat f, int64_t cols, bool double_quant) {
  if (cols <= 0) throw InputError("a weight matrix needs a positive number of columns, got " + std::to_string(cols));
  switch (f) {
    case WeightFormat::bf16:
    case WeightFormat::fp16: return 2.0;
    case WeightFormat::fp32: return 4.0;
    case WeightFormat::int8: return 1.0 + 4.0 / static_cast<double>(cols);
    case WeightFormat::nf4:
    case WeightFormat::fp4:
      return double_quant ? 0.5 + 1.0 / kQuantBlock + 4.0 / (kQuantBlock * kNestedBlock) : 0.5 + 4.0 / kQuantBlock;
  }
  return 2.0;
}

}  // namespace lorasim::model
