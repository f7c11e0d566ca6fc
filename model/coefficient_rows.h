// Private to model/coefficients.cpp (and its tests): the rows of the coefficient table, in the
// order profiles write them.
#pragma once
#include <vector>

#include "model/coefficients.h"

namespace lorasim::model::detail {

/// Every row the table starts with: [time], then [memory], then the numbers of [profile] and
/// the stacks' own. Each row says, per stack, where its value lives.
std::vector<Coefficient> coefficient_rows();

}  // namespace lorasim::model::detail
