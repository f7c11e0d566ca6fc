// The notes of a result as sentences: what the writers (the CLI's table, CSV and JSON) print.
// The simulator decides which notes apply (simulator/notes.h); only this file words them.
#pragma once
#include <string>
#include <vector>

#include "simulator/request.h"
#include "simulator/result.h"

namespace lorasim::sim {

/// The sentence of note `n` of `res`, the result of `r`; "" where the stack has nothing to say.
std::string note_text(const Note& n, const Request& r, const Result& res);
/// Every note of `res` that says something, in order.
std::vector<std::string> note_texts(const Request& r, const Result& res);
/// One sentence per alternative of `res.advice` (simulator/padding_advice.h).
std::vector<std::string> advice_texts(const LengthsResult& res);

}  // namespace lorasim::sim
