// The calibration model's forward pass, and gradient checkpointing as a custom autograd
// Function (LibTorch's C++ API has no torch.utils.checkpoint).
#include "calibrate/lora_decoder.h"

#include <cmath>
#include <limits>
#include <string>

#include <torch/version.h>

// scaled_dot_product_attention arrived in 2.0; its enable_gqa flag (grouped-query attention
// without materialising repeated keys/values) in 2.5.
#if TORCH_VERSION_MAJOR >= 2
#define LORASIM_HAS_SDPA 1
#else
#define LORASIM_HAS_SDPA 0
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define LORASIM_HAS_SDPA_GQA 1
#else
#define LORASIM_HAS_SDPA_GQA 0
#endif

namespace lorasim::calib {

namespace {

constexpr double kInitStd = 0.02;  // Hugging Face's initializer_range

torch::Tensor normal_weight(std::vector<int64_t> shape, const torch::TensorOptions& opts) {
  return torch::empty(shape, opts).normal_(0.0, kInitStd);
}

// HF's RMSNorm, 8 operators: statistics in fp32, result cast back before the weight.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  const auto xf = x.to(torch::kFloat32);                     // (..., n)
  const auto variance = xf.pow(2).mean(-1, /*keepdim=*/true);  // (..., 1)
  const auto normed = xf * torch::rsqrt(variance + eps);     // (..., n)
  return weight * normed.to(x.scalar_type());
}

// rotate_half: (x1, x2) -> (-x2, x1) over the last dimension.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  const auto x1 = x.slice(-1, 0, half);
  const auto x2 = x.slice(-1, half);
  return torch::cat({-x2, x1}, -1);
}

// x (b, heads, s, d); cos, sin (s, d) broadcast over batch and heads. 7 operators.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

#if !LORASIM_HAS_SDPA_GQA
// HF's repeat_kv: (b, kv, s, d) -> (b, kv * groups, s, d).
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t b = x.size(0), kv = x.size(1), s = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, groups, s, d}).reshape({b, kv * groups, s, d});
}
#endif

// Causal attention. q (b, H, s, d); k, v (b, KV, s, d) -> (b, H, s, d).
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if LORASIM_HAS_SDPA_GQA
  // As HF's sdpa path does without a padding mask: is_causal, and GQA inside the kernel.
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true, /*scale=*/std::nullopt,
                                          /*enable_gqa=*/true);
#else
  const int64_t groups = q.size(1) / k.size(1);
  const auto keys = repeat_kv(k, groups);    // (b, H, s, d)
  const auto values = repeat_kv(v, groups);  // (b, H, s, d)
#if LORASIM_HAS_SDPA
  return at::scaled_dot_product_attention(q, keys, values, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true);
#else
  // LibTorch 1.x: HF's eager attention. Keeps the (b, H, s, s) probabilities for backward.
  const int64_t s = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  auto scores = torch::matmul(q, keys.transpose(-2, -1)) * scale;  // (b, H, s, s)
  const auto future = torch::ones({s, s}, q.options().dtype(torch::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  const auto probs = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
  return torch::matmul(probs, values);  // (b, H, s, d)
#endif
#endif
}

// Gradient checkpointing of one block, as torch.utils.checkpoint(use_reentrant=True) does it:
// forward without a graph keeping only the block's input; backward recomputes the block with
// grad enabled and back-propagates through it (LoRA gradients accumulate in their .grad).
struct BlockCheckpoint : torch::autograd::Function<BlockCheckpoint> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor cos, torch::Tensor sin, DecoderBlockImpl* block) {
    torch::NoGradGuard no_grad;
    ctx->save_for_backward({x, cos, sin});
    // The block outlives every graph through it (the trainer owns both), so a raw
    // pointer is safe; saved_data only holds IValues.
    ctx->saved_data["block"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(block));
    return block->forward(x, cos, sin);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    auto* block = reinterpret_cast<DecoderBlockImpl*>(
        static_cast<intptr_t>(ctx->saved_data["block"].toInt()));
    const auto x = saved[0].detach().requires_grad_(true);  // (b, s, hidden)
    torch::Tensor out;
    {
      torch::AutoGradMode grad_on(true);  // the engine runs backward with grad mode off
      out = block->forward(x, saved[1], saved[2]);
    }
    torch::autograd::backward({out}, {grad_out[0]});
    return {x.grad(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

LoraLinearImpl::LoraLinearImpl(int64_t in_features, int64_t out_features, bool with_bias,
                               int64_t rank, double lora_scale, const torch::TensorOptions& base) {
  weight = register_parameter("weight", normal_weight({out_features, in_features}, base),
                              /*requires_grad=*/false);
  if (with_bias)
    bias = register_parameter("bias", torch::zeros({out_features}, base), /*requires_grad=*/false);
  if (rank > 0) {
    const auto fp32 = base.dtype(torch::kFloat32);
    // PEFT's default: A kaiming-uniform (a = sqrt(5), i.e. bound 1/sqrt(in)), B zero.
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    lora_a = register_parameter("lora_a", torch::empty({rank, in_features}, fp32).uniform_(-bound, bound));
    lora_b = register_parameter("lora_b", torch::zeros({out_features, rank}, fp32));
    scale = lora_scale;
  }
}

torch::Tensor LoraLinearImpl::forward(const torch::Tensor& x) {
  auto y = torch::linear(x, weight, bias);  // (..., out)
  if (!lora_a.defined()) return y;
  // Adapters are fp32; cast them to the compute dtype, as autocast would, so activations
  // stay in the compute dtype. 6 operators: two casts, two matmuls, scale, add.
  const auto dtype = x.scalar_type();
  const auto low = torch::linear(x, lora_a.to(dtype));      // (..., r)
  const auto delta = torch::linear(low, lora_b.to(dtype));  // (..., out)
  return y + delta * scale;
}

DecoderBlockImpl::DecoderBlockImpl(const model::Workload& w, const torch::TensorOptions& base)
    : num_heads(w.arch.num_heads),
      num_kv_heads(w.arch.num_kv_heads),
      head_dim(w.arch.head_dim),
      eps(w.arch.rms_norm_eps) {
  const auto& a = w.arch;
  const double scale = w.lora.alpha / static_cast<double>(w.lora.rank);
  auto rank_for = [&](model::Target t) { return w.lora.has(t) ? w.lora.rank : 0; };
  auto proj = [&](const char* name, int64_t in, int64_t out, bool bias, model::Target t) {
    return register_module(name, LoraLinear(in, out, bias, rank_for(t), scale, base));
  };
  // Parameter creation order is fixed, so a seed gives the same weights with or without
  // checkpointing (the tests compare the two).
  input_norm = register_parameter("input_norm", torch::ones({a.hidden_size}, base), false);
  q_proj = proj("q_proj", a.hidden_size, a.q_dim(), a.attention_bias, model::Target::q);
  k_proj = proj("k_proj", a.hidden_size, a.kv_dim(), a.attention_bias, model::Target::k);
  v_proj = proj("v_proj", a.hidden_size, a.kv_dim(), a.attention_bias, model::Target::v);
  o_proj = proj("o_proj", a.q_dim(), a.hidden_size, false, model::Target::o);
  if (a.qk_norm) {
    q_norm = register_parameter("q_norm", torch::ones({a.head_dim}, base), false);
    k_norm = register_parameter("k_norm", torch::ones({a.head_dim}, base), false);
  }
  post_attention_norm = register_parameter("post_attention_norm", torch::ones({a.hidden_size}, base), false);
  gate_proj = proj("gate_proj", a.hidden_size, a.intermediate_size, false, model::Target::gate);
  up_proj = proj("up_proj", a.hidden_size, a.intermediate_size, false, model::Target::up);
  down_proj = proj("down_proj", a.intermediate_size, a.hidden_size, false, model::Target::down);
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  const int64_t b = x.size(0), s = x.size(1);
  // Attention.
  const auto h = rms_norm(x, input_norm, eps);                          // (b, s, hidden)
  auto q = q_proj->forward(h).view({b, s, num_heads, head_dim});        // (b, s, H, d)
  auto k = k_proj->forward(h).view({b, s, num_kv_heads, head_dim});     // (b, s, KV, d)
  const auto v = v_proj->forward(h).view({b, s, num_kv_heads, head_dim}).transpose(1, 2);  // (b, KV, s, d)
  if (q_norm.defined()) {  // Qwen3: per-head RMSNorm before RoPE
    q = rms_norm(q, q_norm, eps);
    k = rms_norm(k, k_norm, eps);
  }
  q = apply_rope(q.transpose(1, 2), cos, sin);  // (b, H, s, d)
  k = apply_rope(k.transpose(1, 2), cos, sin);  // (b, KV, s, d)
  const auto attn = causal_attention(q, k, v)
                        .transpose(1, 2)
                        .reshape({b, s, num_heads * head_dim});  // (b, s, q_dim), a copy
  const auto hs = x + o_proj->forward(attn);                      // (b, s, hidden)
  // SwiGLU MLP.
  const auto m = rms_norm(hs, post_attention_norm, eps);  // (b, s, hidden)
  const auto act = torch::silu(gate_proj->forward(m)) * up_proj->forward(m);  // (b, s, inter)
  return hs + down_proj->forward(act);                                        // (b, s, hidden)
}

LoraDecoderImpl::LoraDecoderImpl(const model::Workload& w, torch::Device device, torch::ScalarType dtype)
    : workload_(w), device_(device), dtype_(dtype) {
  const auto& a = w.arch;
  const auto base = torch::TensorOptions().device(device).dtype(dtype);
  embed_tokens = register_parameter("embed_tokens", normal_weight({a.vocab_size, a.hidden_size}, base), false);
  for (int64_t i = 0; i < a.num_layers; ++i)
    layers_.push_back(register_module("layer" + std::to_string(i), DecoderBlock(w, base)));
  final_norm = register_parameter("final_norm", torch::ones({a.hidden_size}, base), false);
  lm_head = a.tie_embeddings
                ? embed_tokens
                : register_parameter("lm_head", normal_weight({a.vocab_size, a.hidden_size}, base), false);
}

void LoraDecoderImpl::prepare_rope(int64_t seq_len) {
  if (seq_len == rope_len_) return;
  // cos/sin of position * inv_freq in fp32, cast to the compute dtype, as HF does. Computed
  // once per sequence length rather than per forward (a handful of tiny operators).
  torch::NoGradGuard no_grad;
  const int64_t d = workload_.arch.head_dim;
  const auto f32 = torch::TensorOptions().device(device_).dtype(torch::kFloat32);
  const auto inv_freq =
      1.0 / torch::pow(workload_.arch.rope_theta, torch::arange(0, d, 2, f32) / static_cast<double>(d));  // (d/2)
  const auto freqs = torch::outer(torch::arange(seq_len, f32), inv_freq);  // (s, d/2)
  const auto emb = torch::cat({freqs, freqs}, -1);                         // (s, d)
  rope_cos_ = emb.cos().to(dtype_);
  rope_sin_ = emb.sin().to(dtype_);
  rope_len_ = seq_len;
}

torch::Tensor LoraDecoderImpl::forward(const torch::Tensor& input_ids) {
  prepare_rope(input_ids.size(1));
  auto x = torch::embedding(embed_tokens, input_ids);  // (b, s, hidden)
  const bool ckpt = workload_.train.grad_ckpt;
  // HF's enable_input_require_grads: with checkpointing, the first block's input must
  // require grad or the reentrant checkpoint would not back-propagate at all.
  if (ckpt) x.requires_grad_(true);
  for (auto& layer : layers_)
    x = ckpt ? BlockCheckpoint::apply(x, rope_cos_, rope_sin_, layer.get())
             : layer->forward(x, rope_cos_, rope_sin_);  // (b, s, hidden)
  x = rms_norm(x, final_norm, workload_.arch.rms_norm_eps);
  return torch::linear(x, lm_head);  // (b, s, vocab)
}

torch::Tensor LoraDecoderImpl::causal_lm_loss(const torch::Tensor& logits, const torch::Tensor& input_ids) {
  const int64_t b = input_ids.size(0), vocab = logits.size(-1);
  // Shift left: position t predicts token t + 1; the last position has no label.
  const auto labels = torch::cat({input_ids.slice(1, 1), torch::full({b, 1}, -100, input_ids.options())},
                                 1);  // (b, s)
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.to(torch::kFloat32).view({-1, vocab}), labels.view({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(-100));
}

std::vector<torch::Tensor> LoraDecoderImpl::adapter_parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

std::vector<torch::Tensor> LoraDecoderImpl::base_parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters())
    if (!p.requires_grad()) out.push_back(p);
  return out;
}

}  // namespace lorasim::calib
