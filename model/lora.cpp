// LoRA target parsing.
#include "model/lora.h"

#include <algorithm>
#include <sstream>

#include "model/error.h"

namespace lorasim::model {

const char* target_name(Target t) {
  switch (t) {
    case Target::q: return "q";
    case Target::k: return "k";
    case Target::v: return "v";
    case Target::o: return "o";
    case Target::gate: return "gate";
    case Target::up: return "up";
    case Target::down: return "down";
  }
  return "?";
}

bool LoraSpec::has(Target t) const {
  return std::find(targets.begin(), targets.end(), t) != targets.end();
}

std::string LoraSpec::targets_string() const {
  std::string s;
  for (Target t : targets) s += (s.empty() ? "" : ",") + std::string(target_name(t));
  return s;
}

std::vector<Target> parse_targets(const std::string& text) {
  std::vector<bool> chosen(kAllTargets.size(), false);
  std::stringstream ss(text);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove_if(item.begin(), item.end(), ::isspace), item.end());
    if (item.empty()) continue;
    if (item == "all" || item == "all-linear") {
      std::fill(chosen.begin(), chosen.end(), true);
      any = true;
      continue;
    }
    // Accept PEFT's module names too: q_proj, gate_proj, ...
    std::string key = item;
    if (key.size() > 5 && key.compare(key.size() - 5, 5, "_proj") == 0) key.resize(key.size() - 5);
    // Phi-3's fused modules stand for their parts (model/analytics.h: block_projections).
    if (key == "qkv" || key == "gate_up") {
      for (size_t i = 0; i < kAllTargets.size(); ++i) {
        const Target t = kAllTargets[i];
        if (key == "qkv" ? (t == Target::q || t == Target::k || t == Target::v) : (t == Target::gate || t == Target::up))
          chosen[i] = true;
      }
      any = true;
      continue;
    }
    bool found = false;
    for (size_t i = 0; i < kAllTargets.size(); ++i) {
      if (key == target_name(kAllTargets[i])) {
        chosen[i] = true;
        found = any = true;
      }
    }
    if (!found)
      throw InputError("unknown LoRA target " + quoted_excerpt(item) +
                       ": allowed are q, k, v, o, gate, up, down (or q_proj, ...), Phi-3's qkv_proj and "
                       "gate_up_proj, or all");
  }
  if (!any) throw InputError("the LoRA targets are empty: name at least one of q,k,v,o,gate,up,down", "lora_targets");
  std::vector<Target> out;
  for (size_t i = 0; i < kAllTargets.size(); ++i)
    if (chosen[i]) out.push_back(kAllTargets[i]);
  return out;
}

}  // namespace lorasim::model
