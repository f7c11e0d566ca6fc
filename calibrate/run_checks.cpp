// A run's preconditions (see run_checks.h).
#include "calibrate/run_checks.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "calibrate/precision.h"
#include "model/analytics.h"
#include "model/checked.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

std::string bytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int u = 0;
  while (v >= 1024 && u < 8) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", v, units[u]);
  return buf;
}

std::string split(int64_t micro_batch, int64_t accumulation, int64_t seq_len) {
  return "micro-batch " + std::to_string(micro_batch) + " x accumulation " + std::to_string(accumulation) +
         " at sequence length " + std::to_string(seq_len);
}

std::string parts(const RunMemory& m) {
  return "weights and optimizer state " + bytes(m.static_bytes) + ", one micro-batch's activations and logits " +
         bytes(m.activation_bytes) + ", the step's token ids " + bytes(m.token_bytes);
}

}  // namespace

void check_same_model(const model::Workload& built, const model::Workload& asked, const DeviceInfo& device) {
  const auto& a = built.arch;
  const auto& b = asked.arch;
  const bool same_arch = a.hidden_size == b.hidden_size && a.intermediate_size == b.intermediate_size &&
                         a.num_layers == b.num_layers && a.num_heads == b.num_heads &&
                         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
                         a.vocab_size == b.vocab_size && a.tie_embeddings == b.tie_embeddings &&
                         a.qk_norm == b.qk_norm && a.attention_bias == b.attention_bias &&
                         a.rope_theta == b.rope_theta && a.rms_norm_eps == b.rms_norm_eps;
  const bool same_lora = built.lora.rank == asked.lora.rank && built.lora.alpha == asked.lora.alpha &&
                         built.lora.targets == asked.lora.targets;
  const bool same_train = built.train.precision == resolve_precision(asked.train.precision, device).precision &&
                          built.train.grad_ckpt == asked.train.grad_ckpt;
  if (!same_arch || !same_lora || !same_train)
    throw InputError("a calibration run must use the trainer's model ('" + a.name + "', " +
                     std::to_string(a.num_layers) + " layers, its LoRA and precision settings); only "
                     "the sequence length may differ: build another Trainer for '" + b.name + "'");
}

void check_run_counts(int64_t micro_batch, int64_t accumulation, int64_t seq_len) {
  if (micro_batch < 1 || accumulation < 1)
    throw InputError("micro-batch and accumulation must be at least 1, got " + std::to_string(micro_batch) + " x " +
                     std::to_string(accumulation));
  if (micro_batch > kMaxRunMicroBatch)
    throw InputError("a micro-batch of " + std::to_string(micro_batch) + " sequences is more than a run takes (at most " +
                     std::to_string(kMaxRunMicroBatch) + ")");
  if (accumulation > kMaxRunAccumulation)
    throw InputError("an accumulation of " + std::to_string(accumulation) +
                     " micro-batches is more than a run takes (at most " + std::to_string(kMaxRunAccumulation) + ")");
  model::Checked k;
  k.mul(k.mul(micro_batch, accumulation), seq_len);
  if (k.overflowed)
    throw InputError("the tokens of one step (" + split(micro_batch, accumulation, seq_len) +
                     ") do not fit in a 64-bit count");
}

RunMemory least_run_memory(const model::Workload& w, int64_t micro_batch, int64_t accumulation) {
  RunMemory m;
  m.static_bytes = static_cast<double>(model::static_memory(w).total());
  // Saved tensors as lorasim's decoder saves them (the fit scales them up, not down), and the
  // logits the forward must produce; the loss's buffers and the allocator's slack are left out.
  const model::ActivationMemory act = model::activation_memory(w, micro_batch);
  m.activation_bytes = act.saved_bytes + act.logits_buffer_bytes;
  m.token_bytes = 8.0 * static_cast<double>(micro_batch) * static_cast<double>(accumulation) *
                  static_cast<double>(w.train.seq_len);  // int64 ids
  return m;
}

int64_t available_host_bytes(const std::string& meminfo) {
  std::ifstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = -1;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB" && kib >= 0 && kib < (int64_t{1} << 53)) return kib * 1024;
    return -1;
  }
  return -1;
}

std::string run_memory_shortfall(const model::Workload& w, int64_t micro_batch, int64_t accumulation,
                                 const DeviceInfo& device, int64_t host_available_bytes) {
  const RunMemory need = least_run_memory(w, micro_batch, accumulation);
  const std::string what = split(micro_batch, accumulation, w.train.seq_len);
  const double host = need.host_bytes(device.is_cuda, accumulation);
  if (host_available_bytes >= 0 && host > static_cast<double>(host_available_bytes))
    return "not run: " + what + " needs at least " + bytes(host) + " of host memory" +
           (device.is_cuda ? " (the token ids of one micro-batch)" : " (" + parts(need) + ")") +
           ", and the machine has " + bytes(static_cast<double>(host_available_bytes)) + " available";
  if (device.is_cuda && device.total_memory_bytes > 0 &&
      need.device_bytes() > static_cast<double>(device.total_memory_bytes))
    return "not run: " + what + " needs at least " + bytes(need.device_bytes()) + " of device memory (" + parts(need) +
           "), and " + device.spec + " has " + bytes(static_cast<double>(device.total_memory_bytes));
  return "";
}

std::string model_memory_shortfall(const model::Workload& w, const DeviceInfo& device, int64_t host_available_bytes) {
  const double need = static_cast<double>(model::static_memory(w).total());
  const int64_t budget = device.is_cuda ? device.total_memory_bytes : host_available_bytes;
  if (budget <= 0 || need <= static_cast<double>(budget)) return "";
  return "the model '" + w.arch.name + "' needs at least " + bytes(need) + " for its weights, adapters and optimizer " +
         "state in " + model::precision_name(w.train.precision) + ", and " +
         (device.is_cuda ? device.spec + " has " : "the machine has ") + bytes(static_cast<double>(budget)) +
         (device.is_cuda ? "" : " available") + ": use fewer layers or a smaller model";
}

}  // namespace lorasim::calib
