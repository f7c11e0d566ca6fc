// One cost model per padded row length of a workload, built on first use: what a micro-batch
// of rows that long costs. Shared by the simulator of length distributions (lengths_sim) and
// the prediction of a run's recorded widths (measured_lengths), so both price a width alike.
#pragma once
#include <cstdint>
#include <map>
#include <memory>

#include "model/cost_model.h"

namespace lorasim::sim {

class PaddedLengthCosts {
 public:
  /// `w`'s lengths and padding are dropped: each model sees rows of exactly its length.
  PaddedLengthCosts(const model::Workload& w, const model::HardwareModel& hw);
  /// The cost model of `w` with seq_len = row_tokens.
  const model::CostModel& at(int64_t row_tokens);
  /// The model's static bytes: what a one-token micro-batch holds allocated at its peak. A
  /// micro-batch's activation bytes are its peak allocated less these.
  double static_bytes();

 private:
  model::Workload w_;
  model::HardwareModel hw_;
  std::map<int64_t, std::unique_ptr<model::CostModel>> models_;
};

}  // namespace lorasim::sim
