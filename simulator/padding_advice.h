// What the padding of data of many lengths costs the recommendation, and what would cost less:
// the padding waste of the recommended split and of the next best, and the same split
// simulated with packing (TRL packing=True) and with HF's group_by_length, where either would
// make an epoch faster.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "simulator/lengths_sim.h"

namespace lorasim::sim {

/// The recommended split under another way of forming its micro-batches.
struct PaddingAlternative {
  std::string flag;           ///< "--padding packed" or "--group-by-length"
  double epoch_time_s = 0;
  double padding_fraction = 0;
  bool fits = false;          ///< its worst micro-batch fits
  double saving = 0;          ///< 1 - epoch_time_s / the recommended split's epoch time
};

struct PaddingAdvice {
  std::optional<size_t> next_best;            ///< index into the splits of rank 2, if any
  std::vector<PaddingAlternative> faster;     ///< the alternatives at least 1% faster per epoch
  std::vector<std::string> notes;             ///< one per faster alternative
};

/// For `result` = simulate_lengths(r, o) (or its both-checkpointing form) with a recommendation:
/// the next best split, and each alternative the data's padding allows (packing where sequences
/// are padded, grouping where each micro-batch pads to its longest), simulated with the same
/// split and checkpointing. Nothing where nothing is recommended.
PaddingAdvice padding_advice(const Request& r, const LengthsOptions& o, const LengthsResult& result);

}  // namespace lorasim::sim
