// The architecture of a dense decoder-only transformer (Llama / Qwen / Mistral, Gemma 2 and 3,
// Phi-3): what a Hugging Face config.json says, reduced to what time and memory depend on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lorasim::model {

/// The largest sizes validate() accepts: several times those of the largest published dense
/// decoders, so a real config always passes and a typo (a billion layers) does not.
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxHiddenSize = 65536;
inline constexpr int64_t kMaxIntermediateSize = 262144;
inline constexpr int64_t kMaxHeads = 1024;
inline constexpr int64_t kMaxHeadDim = 1024;
inline constexpr int64_t kMaxVocabSize = 4194304;

struct Architecture {
  std::string name;                ///< preset name or config.json path
  int64_t hidden_size = 0;         ///< d_model
  int64_t intermediate_size = 0;   ///< SwiGLU inner width
  int64_t num_layers = 0;          ///< decoder blocks
  int64_t num_heads = 0;           ///< query heads
  int64_t num_kv_heads = 0;        ///< key/value heads (grouped-query attention)
  int64_t head_dim = 0;            ///< per-head width (Qwen3: 128 even when hidden/heads differs)
  int64_t vocab_size = 0;          ///< LM-head rows
  bool tie_embeddings = false;     ///< LM head shares the embedding matrix
  bool qk_norm = false;            ///< Qwen3's per-head RMSNorm on queries and keys
  bool attention_bias = false;     ///< q/k/v projections carry a bias (Qwen2)
  double rope_theta = 10000.0;     ///< RoPE base
  double rms_norm_eps = 1e-6;      ///< RMSNorm epsilon
  /// Hugging Face's model_type: llama, mistral, qwen2, qwen3, gemma2, gemma3_text (gemma3: the
  /// text decoder of the multimodal model, whose vision tower is in extra_frozen_params) or phi3.
  std::string model_type = "llama";
  bool fused_qkv = false;          ///< Phi-3: q, k and v are one qkv_proj (out = q_dim + 2 kv_dim)
  bool fused_gate_up = false;      ///< Phi-3: gate and up are one gate_up_proj (out = 2 intermediate)
  /// Gemma 2/3: an RMSNorm after attention and one before and after the MLP as well as the input
  /// norm: four per block instead of two.
  bool sandwich_norms = false;
  /// Gemma 2: logits = c tanh(logits / c) before the loss; 0: none.
  double final_logit_softcap = 0;
  /// Gemma 2: attention scores = c tanh(scores / c), applied by eager attention and flash-attn
  /// only (transformers' sdpa path ignores it); 0: none.
  double attn_logit_softcap = 0;
  /// Keys before the query a local (sliding-window) layer attends to; 0: no local layers.
  int64_t sliding_window = 0;
  /// Which layers attend locally (size num_layers, or empty: none). Gemma 2: every other layer;
  /// Gemma 3: five of every six; Phi-3 with a sliding_window: all.
  std::vector<bool> local_layers;
  /// Frozen parameters outside the decoder that the model holds but a text fine-tune never runs
  /// (Gemma 3's vision tower and projector): weight memory only.
  int64_t extra_frozen_params = 0;

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  /// RMSNorms over the hidden width in one block (2, or 4 with sandwich norms).
  int64_t hidden_norms_per_block() const { return sandwich_norms ? 4 : 2; }
  /// Whether layer `layer` (0-based) attends within the sliding window only.
  bool is_local(int64_t layer) const {
    return sliding_window > 0 && layer >= 0 && layer < static_cast<int64_t>(local_layers.size()) &&
           local_layers[static_cast<size_t>(layer)];
  }
  /// The number of local layers among the num_layers blocks.
  int64_t local_layer_count() const;


  /// Throws InputError naming the first inconsistent field, or saying the model is too large
  /// when a size is above the bounds above or its fp32 weight bytes do not fit in int64.
  void validate() const;
};

/// Why lorasim's own LibTorch runner (calibrate/) cannot build `arch`, or "" when it can: it builds
/// Llama / Qwen / Mistral blocks; Gemma 2/3 and Phi-3 are modelled for the hf-peft stack only.
std::string runner_refusal(const Architecture& arch);

/// Built-in presets with their published configurations.
const std::vector<Architecture>& presets();

/// Returns the preset called `name`; throws InputError with the nearest name otherwise.
const Architecture& preset(const std::string& name);

/// The share of the predicted peak reserved the worst case adds for a model family whose memory
/// was never measured against a calibration's reserved line: 0 for llama, mistral, qwen2 and
/// qwen3 (the families the H200 calibrations measured), kNewFamilyMemoryError for the others.
inline constexpr double kNewFamilyMemoryError = 0.12;
double family_memory_error(const Architecture& arch);

/// A copy of `arch` truncated to its first `num_layers` blocks (calibration uses these
/// to separate per-layer from fixed costs); its local_layers keep the first `num_layers`.
Architecture truncated(const Architecture& arch, int64_t num_layers);

}  // namespace lorasim::model
