// The architecture of a decoder-only transformer of the Llama / Qwen / Mistral family:
// what a Hugging Face config.json says, reduced to what time and memory depend on.
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

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }

  /// Throws InputError naming the first inconsistent field, or saying the model is too large
  /// when a size is above the bounds above or its fp32 weight bytes do not fit in int64.
  void validate() const;
};

/// Built-in presets with their published configurations.
const std::vector<Architecture>& presets();

/// Returns the preset called `name`; throws InputError with the nearest name otherwise.
const Architecture& preset(const std::string& name);

/// A copy of `arch` truncated to its first `num_layers` blocks (calibration uses these
/// to separate per-layer from fixed costs).
Architecture truncated(const Architecture& arch, int64_t num_layers);

}  // namespace lorasim::model
