// What the padding of data of many lengths costs the recommendation, and what would cost less:
// the padding waste of the recommended split and of the next best, and the same split
// simulated with packing (TRL packing=True) and with HF's group_by_length, where either would
// make an epoch faster; and, under the default allocator, the split that expandable segments would
// let fit where the default allocator's fragmentation bound refuses it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/lengths_sim.h"

namespace lorasim::sim {

/// The recommended split under another way of forming its micro-batches, or (flag "--allocator
/// expandable") the split recommended under expandable segments.
struct PaddingAlternative {
  std::string flag;           ///< "--padding packed", "--group-by-length" or "--allocator expandable"
  std::string env;            ///< what the trainer's environment then needs, if anything
  int64_t micro_batch = 0;    ///< the split it times
  int64_t accumulation = 0;
  bool grad_ckpt = false;
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
/// split and checkpointing; under the default allocator, the recommendation again under expandable
/// segments where it is a faster split (`both_grad_ckpt`: weighing checkpointing on and off, as
/// simulate_lengths_both_grad_ckpt). Nothing where nothing is recommended.
PaddingAdvice padding_advice(const Request& r, const LengthsOptions& o, const LengthsResult& result,
                             bool both_grad_ckpt = false);

}  // namespace lorasim::sim
