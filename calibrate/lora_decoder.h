// The calibration model (private to calibrate/): a Qwen3 / Llama / Mistral-family decoder
// with frozen random base weights and trainable LoRA adapters, built from a model::Workload.
// Its operator structure is what model/analytics.cpp counts (host_ops_per_micro_batch,
// activation_memory); change one, change the other.
#pragma once
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "model/workload.h"

namespace lorasim::calib {

/// A frozen projection y = x W^T (+ b), plus scale * (x A^T) B^T when adapted.
struct LoraLinearImpl : torch::nn::Module {
  /// rank 0: no adapter. Base weights in `base`'s dtype, adapters fp32 on the same device.
  LoraLinearImpl(int64_t in_features, int64_t out_features, bool with_bias, int64_t rank,
                 double scale, const torch::TensorOptions& base);
  torch::Tensor forward(const torch::Tensor& x);  // (..., in) -> (..., out)

  torch::Tensor weight;  ///< (out, in), frozen
  torch::Tensor bias;    ///< (out), frozen; undefined without attention bias
  torch::Tensor lora_a;  ///< (r, in) fp32, trainable; undefined when not adapted
  torch::Tensor lora_b;  ///< (out, r) fp32, trainable, zero at start as in PEFT
  double scale = 0;      ///< alpha / r
};
TORCH_MODULE(LoraLinear);

/// One decoder block: pre-norm attention with RoPE and GQA, then a pre-norm SwiGLU MLP.
struct DecoderBlockImpl : torch::nn::Module {
  DecoderBlockImpl(const model::Workload& w, const torch::TensorOptions& base);
  /// x (b, s, hidden); cos, sin (s, head_dim) -> (b, s, hidden)
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

  LoraLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  LoraLinear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  torch::Tensor input_norm, post_attention_norm;  ///< (hidden)
  torch::Tensor q_norm, k_norm;                   ///< (head_dim); undefined without qk_norm
  int64_t num_heads, num_kv_heads, head_dim;
  double eps;
};
TORCH_MODULE(DecoderBlock);

/// The whole causal LM: embedding, blocks, final norm, LM head (tied or not).
struct LoraDecoderImpl : torch::nn::Module {
  /// Base weights in `dtype` on `device`, drawn from the current torch generator.
  LoraDecoderImpl(const model::Workload& w, torch::Device device, torch::ScalarType dtype);

  /// input_ids (b, s) int64 -> logits (b, s, vocab) in the compute dtype.
  torch::Tensor forward(const torch::Tensor& input_ids);
  /// Hugging Face's causal-LM loss: labels are the inputs shifted left by one, the last
  /// position ignored, cross entropy in fp32, mean over the predicted tokens.
  static torch::Tensor causal_lm_loss(const torch::Tensor& logits, const torch::Tensor& input_ids);

  std::vector<torch::Tensor> adapter_parameters() const;  ///< A and B of every adapter
  std::vector<torch::Tensor> base_parameters() const;     ///< every frozen tensor

 private:
  void prepare_rope(int64_t seq_len);

  model::Workload workload_;
  torch::Device device_;
  torch::ScalarType dtype_;
  torch::Tensor embed_tokens;  ///< (vocab, hidden)
  torch::Tensor final_norm;    ///< (hidden)
  torch::Tensor lm_head;       ///< (vocab, hidden); the embedding when tied
  std::vector<DecoderBlock> layers_;
  int64_t rope_len_ = -1;
  torch::Tensor rope_cos_, rope_sin_;  ///< (s, head_dim) in the compute dtype
};
TORCH_MODULE(LoraDecoder);

}  // namespace lorasim::calib
