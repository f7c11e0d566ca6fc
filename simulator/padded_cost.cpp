// A cost model per padded row length (padded_cost.h).
#include "simulator/padded_cost.h"

namespace lorasim::sim {

PaddedLengthCosts::PaddedLengthCosts(const model::Workload& w, const model::HardwareModel& hw) : w_(w), hw_(hw) {
  w_.train.lengths.reset();
  w_.train.padding = model::Padding{};
}

const model::CostModel& PaddedLengthCosts::at(int64_t row_tokens) {
  auto it = models_.find(row_tokens);
  if (it == models_.end()) {
    model::Workload w = w_;
    w.train.seq_len = row_tokens;
    it = models_.emplace(row_tokens, std::make_unique<model::CostModel>(w, hw_)).first;
  }
  return *it->second;
}

double PaddedLengthCosts::static_bytes() { return at(1).memory(1).peak_allocated_bytes; }

}  // namespace lorasim::sim
