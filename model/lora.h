// LoRA adapter specification: rank, scaling and which projections carry adapters.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lorasim::model {

/// The seven linear projections of a decoder block that LoRA can adapt (Phi-3 fuses q/k/v and
/// gate/up into one module each: model/analytics.h's block_projections).
enum class Target { q, k, v, o, gate, up, down };
inline constexpr std::array<Target, 7> kAllTargets = {Target::q,    Target::k,  Target::v,   Target::o,
                                                      Target::gate, Target::up, Target::down};

/// Short name ("q", "gate", ...) as accepted by --lora-targets.
const char* target_name(Target t);

struct LoraSpec {
  int64_t rank = 16;                                             ///< r
  double alpha = 32.0;                                           ///< scale is alpha / r
  std::vector<Target> targets{kAllTargets.begin(), kAllTargets.end()};  ///< adapted projections

  bool has(Target t) const;
  /// "q,k,v,o,gate,up,down"
  std::string targets_string() const;
};

/// Parses "q,k,v,o", "q_proj,v_proj", "all" or "all-linear"; Phi-3's fused "qkv_proj" (or "qkv")
/// means q,k,v and "gate_up_proj" (or "gate_up") gate,up. Throws InputError naming an unknown
/// target and the allowed ones. Duplicates are dropped; order follows kAllTargets. "all" is every
/// linear projection of a block for every architecture (Phi-3: qkv_proj, o_proj, gate_up_proj,
/// down_proj), as PEFT's "all-linear" (which leaves the LM head out).
std::vector<Target> parse_targets(const std::string& text);

}  // namespace lorasim::model
