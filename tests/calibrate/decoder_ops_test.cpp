// The operator counts model/analytics.cpp charges the host for (host_ops_per_micro_batch,
// recompute_ops_per_micro_batch) against what calibrate/'s LoraDecoder really dispatches on
// the CPU, counted with a RecordFunction callback: top-level ATen operators only (those the
// model's code calls, or the autograd engine calls for backward), not the ones they call.
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <map>
#include <string>

#include "calibrate/lora_decoder.h"
#include "model/analytics.h"
#include "model/architecture.h"

namespace lorasim::calib {
namespace {

thread_local int t_depth = 0;  // nesting of ATen operators on this thread
std::map<std::string, int64_t> g_ops;  // top-level operator -> dispatches

// The autograd engine wraps each backward node in a record of its own
// ("autograd::engine::evaluate_function: MulBackward0"); the operators the node dispatches
// are the ones that count, so the wrapper is transparent.
bool is_wrapper(const at::RecordFunction& fn) { return std::string(fn.name()).rfind("autograd::", 0) == 0; }

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (is_wrapper(fn)) return nullptr;
  if (t_depth++ == 0) ++g_ops[fn.name()];
  return nullptr;
}
void on_exit(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!is_wrapper(fn)) --t_depth;
}

// Counts the top-level operators dispatched while it lives.
class OpCounter {
 public:
  OpCounter() {
    g_ops.clear();
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(on_enter, on_exit).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  int64_t total() const {
    int64_t n = 0;
    for (const auto& [name, count] : g_ops) n += count;
    return n;
  }
  std::string listing() const {
    std::string s;
    for (const auto& [name, count] : g_ops) s += "  " + name + " x" + std::to_string(count) + "\n";
    return s;
  }

 private:
  at::CallbackHandle handle_;
};

struct Counts {
  int64_t forward = 0, loss = 0, backward = 0;
  std::string forward_ops, backward_ops;
};

model::Workload workload(int64_t layers, bool ckpt, bool tied, std::vector<model::Target> targets) {
  model::Workload w;
  w.arch = model::truncated(model::preset("tiny"), 1);
  w.arch.num_layers = layers;
  w.arch.tie_embeddings = tied;
  w.lora.rank = 4;
  w.lora.targets = std::move(targets);
  w.train.seq_len = 16;
  w.train.precision = model::Precision::fp32;
  w.train.grad_ckpt = ckpt;
  return w;
}

// One micro-batch as the trainer runs it (forward, loss / a, backward), after a first one
// that leaves the one-time work (RoPE tables, AdamW-free gradient allocation) behind.
Counts count(const model::Workload& w) {
  torch::manual_seed(0);
  LoraDecoder m(w, torch::kCPU, torch::kFloat32);
  const auto ids = torch::randint(w.arch.vocab_size, {2, w.train.seq_len}, torch::kInt64);  // (b, s)
  (LoraDecoderImpl::causal_lm_loss(m->forward(ids), ids) / 2.0).backward();
  Counts c;
  torch::Tensor logits, loss;
  {
    OpCounter ops;
    logits = m->forward(ids);
    c.forward = ops.total();
    c.forward_ops = ops.listing();
  }
  {
    OpCounter ops;
    loss = LoraDecoderImpl::causal_lm_loss(logits, ids) / 2.0;
    c.loss = ops.total();
  }
  {
    OpCounter ops;
    loss.backward();
    c.backward = ops.total();
    c.backward_ops = ops.listing();
  }
  return c;
}

const std::vector<model::Target> kAll = {model::Target::q, model::Target::k, model::Target::v, model::Target::o,
                                         model::Target::gate, model::Target::up, model::Target::down};

TEST(DecoderOpsTest, Explore) {
  for (bool ckpt : {false, true})
    for (bool tied : {true, false})
      for (const auto& targets : {kAll, std::vector<model::Target>{model::Target::q, model::Target::v}}) {
        const auto w1 = workload(1, ckpt, tied, targets), w2 = workload(2, ckpt, tied, targets);
        const Counts c1 = count(w1), c2 = count(w2);
        std::cout << "ckpt " << ckpt << " tied " << tied << " targets " << targets.size()
                  << ": L1 fwd " << c1.forward << " loss " << c1.loss << " bwd " << c1.backward
                  << " | L2 fwd " << c2.forward << " loss " << c2.loss << " bwd " << c2.backward
                  << " | analytic L1 " << model::host_ops_per_micro_batch(w1) << " L2 "
                  << model::host_ops_per_micro_batch(w2) << " recompute L1 "
                  << model::recompute_ops_per_micro_batch(w1) << "\n";
        if (!ckpt && tied && targets.size() == 7) std::cout << "FWD L1\n" << c1.forward_ops << "BWD L1\n" << c1.backward_ops;
      }
}

}  // namespace
}  // namespace lorasim::calib
