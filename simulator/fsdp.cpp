// FSDP FULL_SHARD's memory and collectives for a LoRA fine-tune (fsdp.h).
#include "simulator/fsdp.h"

#include <algorithm>
#include <string>

#include "model/analytics.h"
#include "model/error.h"
#include "simulator/data_parallel.h"

namespace lorasim::sim {

double ring_allgather_s(double bytes, int64_t gpus, const model::Interconnect& link) {
  if (gpus <= 1) return 0;
  const double n = static_cast<double>(gpus);
  return link.allreduce_latency_s * (n - 1) + (n - 1) / n * bytes / (link.allreduce_gbps * 1e9);
}

void check_fsdp(const model::Workload& w, int64_t gpus) {
  if (gpus < 2)
    throw InputError("--fsdp shards the frozen weights across GPUs: give --gpus 2 or more", "fsdp");
  if (w.train.quantized())
    throw InputError("FSDP of a quantized base (QLoRA's bitsandbytes weights, bnb_4bit_quant_storage) is not "
                     "modelled yet: drop --fsdp or the quantization",
                     "fsdp");
}

namespace {
struct UnitBytes {
  double layer = 0;  ///< one decoder layer's frozen weights and adapters
  double root = 0;   ///< everything outside the decoder layers
  double layer_gradients = 0;
};
UnitBytes unit_bytes(const model::Workload& w) {
  const model::ParamCounts p = model::count_params(w.arch, w.lora);
  const double e = static_cast<double>(model::bytes_per_element(w.train.precision));
  const double adapter = static_cast<double>(w.train.adapter_element_bytes());
  const double layers = static_cast<double>(w.arch.num_layers);
  UnitBytes u;
  u.layer = static_cast<double>(p.per_layer) * e + static_cast<double>(p.lora_per_layer) * adapter;
  u.root = (static_cast<double>(p.base) - layers * static_cast<double>(p.per_layer)) * e;
  u.layer_gradients = static_cast<double>(p.trainable) * adapter / layers;
  return u;
}
}  // namespace

FsdpMemory fsdp_memory(const model::Workload& w, int64_t gpus) {
  check_fsdp(w, gpus);
  const model::StaticMemory s = model::static_memory(w);
  const UnitBytes u = unit_bytes(w);
  const double n = static_cast<double>(gpus);
  const double state = static_cast<double>(s.adapter_bytes + s.gradient_bytes + s.optimizer_bytes);
  FsdpMemory m;
  m.sharded_weights_bytes = static_cast<double>(s.weights_bytes) / n;
  m.root_unit_bytes = u.root;
  m.layers_in_flight_bytes = static_cast<double>(std::min(kFsdpLayersInFlight, w.arch.num_layers)) * u.layer;
  m.adapter_state_bytes = state / n;
  m.delta_bytes = m.sharded_weights_bytes + m.root_unit_bytes + m.layers_in_flight_bytes + m.adapter_state_bytes -
                  static_cast<double>(s.weights_bytes) - state;
  return m;
}

FsdpMicroBatch fsdp_micro_batch(const model::Workload& w, int64_t gpus, const model::Interconnect& link,
                                double device_s, bool reduce_scatter) {
  const UnitBytes u = unit_bytes(w);
  const double layers = static_cast<double>(w.arch.num_layers);
  const double layer_s = ring_allgather_s(u.layer, gpus, link);
  const double root_s = ring_allgather_s(u.root, gpus, link);
  const double rs_layer_s = reduce_scatter ? ring_allgather_s(u.layer_gradients, gpus, link) : 0;
  const double backward_s = device_s * backward_share(w.train.grad_ckpt);
  const double forward_s = device_s - backward_s;
  // The backward gathers every layer again (FULL_SHARD reshards after the forward), and once
  // more for the recompute under gradient checkpointing; the root unit stays gathered.
  const double backward_passes = w.train.grad_ckpt ? 2 : 1;
  const double forward_comm_s = layers * layer_s;
  const double backward_comm_s = backward_passes * layers * layer_s + layers * rs_layer_s;
  FsdpMicroBatch m;
  m.comm_s = root_s + forward_comm_s + backward_comm_s;
  m.exposed_s = root_s + layer_s + std::max(0.0, forward_comm_s - forward_s) + layer_s +
                std::max(0.0, backward_comm_s - backward_s) + rs_layer_s;
  return m;
}

FsdpMicroBatch fsdp_step(const model::Workload& w, int64_t gpus, const model::Interconnect& link,
                         double first_device_s, double accumulating_device_s, int64_t accumulation) {
  FsdpMicroBatch step;
  const int64_t distinct = std::min<int64_t>(accumulation, 3);
  for (int64_t k = 0; k < distinct; ++k) {
    // The first, the middle ones (alike: counted once and scaled) and the last.
    const bool last = k == distinct - 1;
    const double device_s = k == 0 ? first_device_s : accumulating_device_s;
    const double times = k == 1 && !last ? static_cast<double>(accumulation - 2) : 1;
    const FsdpMicroBatch m = fsdp_micro_batch(w, gpus, link, device_s, last);
    step.comm_s += times * m.comm_s;
    step.exposed_s += times * m.exposed_s;
  }
  return step;
}

}  // namespace lorasim::sim
