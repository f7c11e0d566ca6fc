// The splits of a request and its checks (splits.h).
#include "simulator/splits.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "model/checked.h"
#include "model/error.h"
#include "model/lengths.h"
#include "model/training_stack.h"
#include "simulator/data_parallel.h"
#include "simulator/fsdp.h"
#include "simulator/measured_splits.h"
#include "simulator/note_format.h"

namespace lorasim::sim {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  // d <= n / d, not d * d <= n: the square overflows for B near INT64_MAX.
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

void validate_fixed(const Request& r) {
  if (r.effective_batch < 1)
    throw InputError("effective batch must be a positive number of sequences, got " +
                     std::to_string(r.effective_batch));
  if (r.effective_batch > kMaxEffectiveBatch)
    throw InputError("effective batch " + std::to_string(r.effective_batch) +
                     " is too large: lorasim simulates at most " + std::to_string(kMaxEffectiveBatch) +
                     " (2^40) sequences per optimizer step");
  if (r.steps < 1) throw InputError("steps must be at least 1, got " + std::to_string(r.steps));
  if (r.memory_limit_bytes < 0)
    throw InputError("memory limit must be positive, got " + std::to_string(r.memory_limit_bytes));
  if (!(r.safety_margin >= 0 && r.safety_margin < 1))
    throw InputError("safety margin must be a fraction in [0, 1), got " + std::to_string(r.safety_margin));
  if (r.workload.train.precision == model::Precision::bf16 && !r.hardware.bf16_supported)
    throw InputError("the " + r.hardware.display_name +
                     " has no bf16 support: it trains in fp16 or fp32", "precision");
  r.workload.validate();
  model::require_attention_support(r.hardware, r.workload.stack.attn_impl);
  if (r.fsdp && r.gpus == 1) check_fsdp(r.workload, r.gpus);
  if (r.gpus != 1) {
    data_parallel_cost(r.workload, r.gpus, model::Interconnect{}, 0);  // the GPU count's range
    if (r.fsdp) check_fsdp(r.workload, r.gpus);
    check_divides(r.effective_batch, r.gpus);
    if (!r.measured.empty())
      throw InputError("measured splits of one GPU cannot stand in for a data-parallel prediction: drop them or "
                       "predict one GPU",
                       "gpus");
  }
  check_measured(r.measured, r.effective_batch);
  const model::TrainingSpec& t = r.workload.train;
  const model::LengthDistribution d = t.length_distribution();
  if (!d.one_point() || d.longest_tokens() != t.seq_len ||
      model::padded_length_tokens(t.padding, t.seq_len, d.max_length_tokens()) != t.seq_len)
    throw InputError("data whose micro-batches are not all " + std::to_string(t.seq_len) +
                         "-token rows (their lengths or padding) are simulated by simulate_lengths "
                         "(simulator/simulate.h), not simulate",
                     "lengths");
  model::Checked k;
  k.mul(r.effective_batch, r.workload.train.seq_len);
  if (k.overflowed)
    throw InputError("effective batch " + std::to_string(r.effective_batch) + " x sequence length " +
                     std::to_string(r.workload.train.seq_len) +
                     " tokens per optimizer step does not fit in a 64-bit integer: use a smaller effective "
                     "batch or a shorter sequence length");
}

double memory_limit_bytes(const Request& r) {
  return static_cast<double>(r.memory_limit_bytes > 0 ? r.memory_limit_bytes : r.hardware.memory_bytes);
}

double usable_memory_bytes(const Request& r, const model::Coefficients& c) {
  const double limit = memory_limit_bytes(r);
  const double usable = limit * (1 - r.safety_margin) - c.context_bytes;
  if (usable <= 0)
    throw InputError("no memory is usable: the memory limit of " + mib(limit) + " less the " +
                     percent(r.safety_margin) + " safety margin is below the " + mib(c.context_bytes) +
                     " CUDA context of the " + r.hardware.display_name + ": raise the memory limit");
  return usable;
}

void check_byte_count(const model::MemoryEstimate& m, int64_t b, int64_t row_tokens) {
  // Byte counts are reported as int64; the worst case bounds the other two.
  if (!(m.worst_reserved_bytes <= model::kMaxInt64AsDouble && m.peak_reserved_bytes <= model::kMaxInt64AsDouble))
    throw InputError("a micro-batch of " + std::to_string(b) + (b == 1 ? " sequence of " : " sequences of ") +
                     std::to_string(row_tokens) +
                     " tokens would need more than 8 EiB of memory, beyond what lorasim counts: use a "
                     "smaller effective batch or a shorter sequence length");
}

}  // namespace lorasim::sim
