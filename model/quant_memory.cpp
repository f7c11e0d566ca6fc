// A quantized base's and the optimizers' bytes. Each constant names the bitsandbytes 0.50 /
// PEFT 0.21 code it comes from; docs/hf-stack-memory.md works the totals by hand.
#include "model/quant_memory.h"

#include <algorithm>

#include "model/analytics.h"
#include "model/checked.h"
#include "model/error.h"

namespace lorasim::model {
namespace {

constexpr int64_t kQuantBlock = 64;             // quantize_4bit's default blocksize
constexpr int64_t kOptimizerBlock = 256;        // Optimizer2State.init_state: blocksize = 256
constexpr int64_t kMin8bitSize = 4096;          // Optimizer2State's min_8bit_size
constexpr int64_t kMinPagedElements = 100000;   // get_state_buffer: p.numel() < 1e5 stays unpaged

int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

InputError too_large(const Workload& w, const char* what) {
  return InputError("model '" + w.arch.name + "' is too large to simulate: its " + what +
                    " do not fit in a 64-bit integer (check hidden_size, intermediate_size, "
                    "num_hidden_layers and vocab_size)");
}

bool eight_bit(Optimizer o) { return o == Optimizer::paged_adamw_8bit || o == Optimizer::adamw_bnb_8bit; }
bool paged(Optimizer o) { return o == Optimizer::paged_adamw_8bit || o == Optimizer::paged_adamw_32bit; }

// The state of one adapter tensor of n elements whose weights take `e` bytes each: torch's AdamW
// keeps its two moments in the parameter's dtype, bitsandbytes' 32-bit state is fp32 whatever
// the parameter's dtype, its 8-bit state one byte per moment.
int64_t tensor_state_bytes(Optimizer o, int64_t n, int64_t e, Checked& k) {
  if (o == Optimizer::adamw_torch || o == Optimizer::adamw_torch_fused) return k.mul(n, 2 * e);
  if (!eight_bit(o) || n < kMin8bitSize) return k.mul(n, 8);
  return k.add(k.mul(n, 2), k.mul(ceil_div(n, kOptimizerBlock), 8));
}

// Calls `each(elements, count)` for every adapter tensor shape of `w`: A (r x in) and B (out x r)
// of each adapted projection, num_layers of each.
template <class F>
void for_each_adapter_tensor(const Workload& w, F each) {
  for (const Projection& p : block_projections(w.arch)) {
    if (!w.lora.has(p.target)) continue;
    each(w.lora.rank * p.in_features, w.arch.num_layers);
    each(w.lora.rank * p.out_features, w.arch.num_layers);
  }
}

}  // namespace

int64_t frozen_weight_bytes(const Workload& w) {
  const ParamCounts c = count_params(w.arch, w.lora);
  const WeightFormat stored = w.train.weight_storage();
  Checked k;
  if (!is_quantized(stored)) {
    const int64_t bytes = k.mul(c.base, bytes_per_element(w.train.precision));
    if (k.overflowed) throw too_large(w, "frozen weights");
    return bytes;
  }
  int64_t projections = 0, projection_params = 0;
  for (const Projection& p : block_projections(w.arch)) {
    // nn.Linear's weight is out x in: bnb's absmax blocks and LLM.int8's row scales follow it.
    projections = k.add(projections, stored_weight_bytes(stored, p.out_features, p.in_features, w.train.double_quant));
    projection_params = k.add(projection_params, k.mul(p.out_features, p.in_features));
  }
  // Linear4bit.forward casts its bias to the compute dtype on the first call (`bias.data =
  // bias.data.to(x.dtype)`), undoing the preparation's fp32 for Qwen2's q/k/v biases.
  const int64_t e = bytes_per_element(w.train.precision);
  const int64_t biases = w.arch.attention_bias && stored != WeightFormat::int8
                             ? k.mul(w.arch.num_layers, k.add(w.arch.q_dim(), k.mul(2, w.arch.kv_dim())))
                             : 0;
  const int64_t rest_params = c.base - w.arch.num_layers * projection_params - biases;
  const int64_t rest_bytes_per = w.train.kbit_prepare ? 4 : e;
  const int64_t bytes = k.add(k.add(k.mul(w.arch.num_layers, projections), k.mul(rest_params, rest_bytes_per)),
                              k.mul(biases, e));
  if (k.overflowed) throw too_large(w, "frozen weights");
  return bytes;
}

int64_t optimizer_state_bytes(const Workload& w) {
  Checked k;
  int64_t bytes = 0;
  for_each_adapter_tensor(w, [&](int64_t n, int64_t count) {
    bytes = k.add(bytes, k.mul(count, tensor_state_bytes(w.train.optimizer, n, w.train.adapter_element_bytes(), k)));
  });
  if (k.overflowed) throw too_large(w, "optimizer state bytes");
  return bytes;
}

int64_t optimizer_paged_bytes(const Workload& w) {
  if (!paged(w.train.optimizer)) return 0;
  Checked k;
  int64_t bytes = 0;
  for_each_adapter_tensor(w, [&](int64_t n, int64_t count) {
    if (n >= kMinPagedElements) bytes = k.add(bytes, k.mul(count, tensor_state_bytes(w.train.optimizer, n, w.train.adapter_element_bytes(), k)));
  });
  if (k.overflowed) throw too_large(w, "optimizer state bytes");
  return bytes;
}

double dequant_buffer_bytes(const Workload& w) {
  const WeightFormat stored = w.train.weight_storage();
  if (!is_quantized(stored)) return 0;
  const double e = static_cast<double>(bytes_per_element(w.train.precision));
  double largest = 0;
  for (const Projection& p : block_projections(w.arch)) {
    const double n = static_cast<double>(p.in_features) * static_cast<double>(p.out_features);
    double bytes = n * e;  // the dequantized weight (int8: CB.to(dtype) in the backward)
    // _dequant_linear_fallback: the fp32 absmax dequantized from its uint8 copy, and the sum with
    // the offset, both alive while the weight is dequantized.
    if (stored != WeightFormat::int8 && w.train.double_quant)
      bytes += 2 * 4 * static_cast<double>(ceil_div(p.in_features * p.out_features, kQuantBlock));
    largest = std::max(largest, bytes);
  }
  return largest;
}

double dequantized_weight_bytes(const Workload& w) {
  const WeightFormat stored = w.train.weight_storage();
  if (!is_quantized(stored)) return 0;
  double per_block = 0;
  for (const Projection& p : block_projections(w.arch))
    per_block += static_cast<double>(stored_weight_bytes(stored, p.out_features, p.in_features, w.train.double_quant));
  const double dequantizations = (w.train.grad_ckpt ? 2.0 : 1.0) + 1.0;  // forward passes, then the backward
  return dequantizations * static_cast<double>(w.arch.num_layers) * per_block;
}

double quantized_linear_calls(const Workload& w) {
  if (!is_quantized(w.train.weight_storage())) return 0;
  const double passes = (w.train.grad_ckpt ? 2.0 : 1.0) + 1.0;  // as dequantized_weight_bytes
  return passes * static_cast<double>(w.arch.num_layers) * static_cast<double>(block_projections(w.arch).size());
}

ActivationBytes activation_bytes(const Workload& w) {
  const double e = static_cast<double>(bytes_per_element(w.train.precision));
  if (!w.train.kbit_prepared()) return {e, e, e};
  const double half = w.stack.autocast ? e : 4.0;
  return {4.0, half, half};
}

}  // namespace lorasim::model
