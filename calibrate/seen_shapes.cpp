// The process's shapes per model kind (seen_shapes.h).
#include "calibrate/seen_shapes.h"

#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "model/error.h"

namespace lorasim::calib {
namespace {

struct ProcessShapes {
  std::mutex mutex;
  std::map<std::string, std::set<std::pair<int64_t, int64_t>>> by_kind;  // kind -> (rows, width)
};

ProcessShapes& process_shapes() {
  static ProcessShapes shapes;
  return shapes;
}

}  // namespace

std::string shape_kind(const model::Workload& w, const std::string& device_spec) {
  const model::Architecture& a = w.arch;
  std::string k = a.model_type;
  for (int64_t v : {a.hidden_size, a.intermediate_size, a.num_heads, a.num_kv_heads, a.head_dim, a.vocab_size,
                    w.lora.rank})
    k += "|" + std::to_string(v);
  for (bool v : {a.tie_embeddings, a.qk_norm, a.attention_bias, a.fused_qkv, a.fused_gate_up, a.sandwich_norms})
    k += v ? "|1" : "|0";
  return k + "|" + w.lora.targets_string() + "|" + model::precision_name(w.train.precision) + "|" + device_spec;
}

void forget_shapes() {
  ProcessShapes& p = process_shapes();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.by_kind.clear();
}

ShapeTally::ShapeTally(std::string kind) : kind_(std::move(kind)) {}

void ShapeTally::see(int64_t rows, int64_t width_tokens) {
  ProcessShapes& p = process_shapes();
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    fresh = p.by_kind[kind_].emplace(rows, width_tokens).second;
  }
  if (counting_ && fresh) ++new_shapes_;
}

void ShapeTally::start_counting() { counting_ = true; }

void ShapeTally::stop_counting() { counting_ = false; }

double new_shapes_per_step(int64_t new_shapes, int64_t measure_steps, bool widths_varied) {
  if (measure_steps < 1) throw InputError("new shapes per step need at least 1 timed step, got " + std::to_string(measure_steps));
  return widths_varied ? static_cast<double>(new_shapes) / static_cast<double>(measure_steps) : 0.0;
}

}  // namespace lorasim::calib
