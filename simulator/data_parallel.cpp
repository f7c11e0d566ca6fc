// The all-reduce of data-parallel LoRA and how much of it the backward hides (data_parallel.h).
#include "simulator/data_parallel.h"

#include <algorithm>
#include <string>

#include "model/analytics.h"
#include "model/error.h"
#include "simulator/splits.h"

namespace lorasim::sim {

model::Interconnect link_prior(model::Link link) {
  model::Interconnect ic;
  ic.link = link;
  // 0.7 x per direction: NVLink 3 300 GB/s, PCIe Gen4 x16 32 GB/s (the built-in profiles' rule).
  ic.allreduce_gbps = link == model::Link::nvlink ? 0.7 * 300 : 0.7 * 32;
  ic.allreduce_latency_s = link == model::Link::nvlink ? 5e-6 : 1e-5;
  return ic;
}

model::Interconnect interconnect_for(const model::HardwareModel& hw, std::optional<model::Link> link) {
  if (hw.interconnect && (!link || *link == hw.interconnect->link)) return *hw.interconnect;
  return link_prior(link.value_or(model::Link::pcie));
}

int64_t bucket_count(int64_t gradient_bytes, int64_t bucket_bytes) {
  if (gradient_bytes <= 0) return 0;
  return (gradient_bytes - 1) / bucket_bytes + 1;  // ceil without overflow near INT64_MAX
}

namespace {
double step_latency_s(int64_t gpus, const model::Interconnect& link) {
  return link.allreduce_latency_s * 2.0 * static_cast<double>(gpus - 1);
}
// Seconds per byte of a ring all-reduce: each GPU sends and receives 2(N-1)/N of the message.
double seconds_per_byte(int64_t gpus, const model::Interconnect& link) {
  const double n = static_cast<double>(gpus);
  return 2.0 * (n - 1) / n / (link.allreduce_gbps * 1e9);
}
}  // namespace

double ring_allreduce_s(double bytes, int64_t buckets, int64_t gpus, const model::Interconnect& link) {
  if (gpus <= 1 || buckets <= 0) return 0;
  return step_latency_s(gpus, link) * static_cast<double>(buckets) + seconds_per_byte(gpus, link) * bytes;
}

double exposed_allreduce_s(double bytes, int64_t gpus, const model::Interconnect& link, double backward_s,
                           int64_t bucket_bytes) {
  const int64_t buckets = bucket_count(static_cast<int64_t>(bytes), bucket_bytes);
  if (gpus <= 1 || buckets == 0) return 0;
  const double total_s = ring_allreduce_s(bytes, buckets, gpus, link);
  const double full = static_cast<double>(bucket_bytes);
  const double last = bytes - full * static_cast<double>(buckets - 1);
  const double last_s = ring_allreduce_s(last, 1, gpus, link);
  // Bucket k is ready at backward_s x (its gradients and those before it) / bytes. The full
  // buckets arrive evenly and take equal times, so the last one finishes at the later of two
  // chains: all of them from the first's arrival, or the last full one alone from its own.
  const double first_ready_s = buckets == 1 ? backward_s : backward_s * full / bytes;
  double finish_s = first_ready_s + total_s;
  if (buckets >= 2) {
    const double last_full_ready_s = backward_s * full * static_cast<double>(buckets - 1) / bytes;
    finish_s = std::max(finish_s, last_full_ready_s + ring_allreduce_s(full, 1, gpus, link) + last_s);
  }
  finish_s = std::max(finish_s, backward_s + last_s);  // the last bucket is ready only at the end
  return finish_s - backward_s;
}

double backward_share(bool grad_ckpt) { return grad_ckpt ? 2.0 / 3.0 : 0.5; }

DataParallelCost data_parallel_cost(const model::Workload& w, int64_t gpus, const model::Interconnect& link,
                                    double micro_batch_device_s) {
  if (gpus < 1 || gpus > kMaxGpus)
    throw InputError("the number of GPUs must be in [1, " + std::to_string(kMaxGpus) + "] (the GPUs of one host), got " +
                         std::to_string(gpus),
                     "gpus");
  DataParallelCost c;
  c.gpus = gpus;
  if (gpus == 1) return c;
  const model::ParamCounts p = model::count_params(w.arch, w.lora);
  c.gradient_bytes = p.trainable * kAdapterGradientBytes;  // no overflow: static_memory counts it
  c.buckets = bucket_count(c.gradient_bytes);
  const double bytes = static_cast<double>(c.gradient_bytes);
  c.allreduce_time_s = ring_allreduce_s(bytes, c.buckets, gpus, link);
  c.allreduce_exposed_s =
      exposed_allreduce_s(bytes, gpus, link, micro_batch_device_s * backward_share(w.train.grad_ckpt));
  c.bucket_memory_bytes = bytes;
  return c;
}

void check_divides(int64_t effective_batch, int64_t gpus) {
  if (gpus >= 1 && effective_batch >= 1 && effective_batch % gpus == 0) return;
  std::string counts;
  for (int64_t d : divisors(effective_batch)) {
    if (d > kMaxGpus) break;
    counts += (counts.empty() ? "" : ", ") + std::to_string(d);
  }
  throw InputError("effective batch " + std::to_string(effective_batch) + " does not divide among " +
                       std::to_string(gpus) + " GPUs: use a GPU count that divides it (" + counts +
                       ") or an effective batch that is a multiple of " + std::to_string(gpus),
                   "gpus");
}

}  // namespace lorasim::sim
