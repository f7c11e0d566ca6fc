// Both settings of gradient checkpointing per split: two simulations merged and ranked again.
#include "simulator/grad_ckpt_sim.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace lorasim::sim {
namespace {

Request with_grad_ckpt(const Request& r, bool on) {
  Request q = r;
  q.workload.train.grad_ckpt = on;
  return q;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The notes of the variant holding the recommendation (its host-bound note is about that
// split), then the other's that are new, less those about its own recommendation or its lack.
std::vector<std::string> merged_notes(const Result& off, const Result& on, bool recommended_on) {
  const Result& first = recommended_on ? on : off;
  const Result& second = recommended_on ? off : on;
  std::vector<std::string> notes = first.notes;
  for (const std::string& n : second.notes)
    if (std::find(notes.begin(), notes.end(), n) == notes.end() && !starts_with(n, "the recommended split") &&
        !starts_with(n, "no split"))
      notes.push_back(n);
  return notes;
}

// The merged order: (checkpointing, index), ascending micro-batch, off before on.
// Both enumerate the same divisors, so the i-th splits of the two have the same micro-batch.
std::vector<std::pair<bool, size_t>> interleaved(size_t splits) {
  std::vector<std::pair<bool, size_t>> order;
  for (size_t i = 0; i < splits; ++i) {
    order.push_back({false, i});
    order.push_back({true, i});
  }
  return order;
}

// Ranks `splits` by `time(i)` among those that fit; returns the recommended index.
template <class Time>
std::optional<size_t> rank(std::vector<Split>& splits, Time time) {
  std::vector<size_t> order;
  for (size_t i = 0; i < splits.size(); ++i) {
    splits[i].rank = 0;
    if (splits[i].fits) order.push_back(i);
  }
  // Stable: the merged order already puts the larger accumulation, then checkpointing off, first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return time(a) < time(b); });
  for (size_t k = 0; k < order.size(); ++k) splits[order[k]].rank = static_cast<int>(k + 1);
  if (order.empty()) return std::nullopt;
  return order.front();
}

}  // namespace

Result simulate_both_grad_ckpt(const Request& r) {
  const Result off = simulate(with_grad_ckpt(r, false));
  const Result on = simulate(with_grad_ckpt(r, true));
  Result out;
  out.memory_limit_bytes = off.memory_limit_bytes;
  out.usable_memory_bytes = off.usable_memory_bytes;
  out.data_parallel = off.data_parallel;  // the same gradients either way; the exposure is per split
  out.interconnect = off.interconnect;
  out.fsdp = off.fsdp;
  out.fsdp_memory = off.fsdp_memory;
  for (const auto& [ckpt, i] : interleaved(off.splits.size())) out.splits.push_back((ckpt ? on : off).splits[i]);
  out.recommended = rank(out.splits, [&](size_t i) { return out.splits[i].step_time_s; });
  out.notes = merged_notes(off, on, out.recommended && out.splits[*out.recommended].grad_ckpt);
  return out;
}

LengthsResult simulate_lengths_both_grad_ckpt(const Request& r, const LengthsOptions& o) {
  const LengthsResult off = simulate_lengths(with_grad_ckpt(r, false), o);
  const LengthsResult on = simulate_lengths(with_grad_ckpt(r, true), o);
  LengthsResult out;
  out.rows_per_epoch = off.rows_per_epoch;
  out.result.memory_limit_bytes = off.result.memory_limit_bytes;
  out.result.usable_memory_bytes = off.result.usable_memory_bytes;
  out.result.data_parallel = off.result.data_parallel;
  out.result.interconnect = off.result.interconnect;
  out.result.fsdp = off.result.fsdp;
  out.result.fsdp_memory = off.result.fsdp_memory;
  for (const auto& [ckpt, i] : interleaved(off.result.splits.size())) {
    out.result.splits.push_back((ckpt ? on : off).result.splits[i]);
    out.lengths.push_back((ckpt ? on : off).lengths[i]);
  }
  out.result.recommended = rank(out.result.splits, [&](size_t i) { return out.lengths[i].epoch_time_s; });
  out.result.notes = merged_notes(off.result, on.result,
                                  out.result.recommended && out.result.splits[*out.result.recommended].grad_ckpt);
  return out;
}

}  // namespace lorasim::sim
