// The notes of a result, as typed values: which caveats apply to it and the numbers they name.
// simulator/note_text.h writes them as sentences.
#pragma once
#include <vector>

#include "model/cost_model.h"
#include "simulator/request.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// What the notes rest on beyond the request and the ranked result.
struct NoteFacts {
  bool lengths = false;          ///< data of many lengths
  bool varying = false;          ///< their micro-batches take more than one shape
  bool all_exact = false;        ///< several GPUs: every split's slowest GPU was taken exactly
};

/// The notes of `res` (ranked) for `r`, `m` the cost model's view of its stack, in the order
/// they are written: measured runs, data parallelism, the profile, the stack, the model family,
/// the precision, the data's shapes, several GPUs, what is host-bound, what does not fit.
std::vector<Note> notes_of(const Request& r, const model::StackModel& m, const Result& res, const NoteFacts& facts);

}  // namespace lorasim::sim
