// The memory fit: the allocated peak's scales and workspace, then the caching allocator's
// reserved-over-allocated line.
#include <algorithm>
#include <string_view>

#include "calibrate/fit_internal.h"
#include "calibrate/nnls.h"

namespace lorasim::calib::detail {
namespace {

// The allocated design with its intercept (workspace_bytes) first: the column order the
// committed profiles were fitted with. NNLS's pivoting makes the last digits of the result
// depend on the order, so this keeps refits of them reproducible to the digit.
Columns allocated_columns(model::StackKind s) {
  Columns cols = columns({model::Term::allocated}, s);
  std::stable_partition(cols.begin(), cols.end(),
                        [](const model::Coefficient* c) { return std::string_view(c->name) == "workspace_bytes"; });
  return cols;
}

}  // namespace

void fit_memory(const std::vector<Row>& rows, model::StackModel& hw) {
  // Allocated peak = static (analytic) + the allocated terms (model/coefficients.h). Rows that
  // measured only the reserved peak (HF users often log just that) stand in for allocated
  // with a reserved model of 1:1. Weighted by the whole peak, not the activation part, so
  // the error is relative to what the user compares with the GPU's memory.
  const Columns allocated = allocated_columns(hw.stack);
  const Columns reserved = columns({model::Term::reserved}, hw.stack);
  std::vector<const Row*> used;
  std::vector<double> alloc;
  std::vector<Eigen::VectorXd> rx;
  std::vector<double> ry;
  for (const Row& r : rows) {
    const double a = r.allocated_target();
    if (!measured(a)) continue;
    used.push_back(&r);
    alloc.push_back(a);
    if (measured(r.m->peak_allocated_bytes) && measured(r.m->peak_reserved_bytes)) {
      model::Features f = r.f;
      f.allocated_bytes = r.m->peak_allocated_bytes;
      rx.push_back(regressors(reserved, f, linear_basis(hw.c, hw.stack)));
      ry.push_back(r.m->peak_reserved_bytes);
    }
  }
  if (used.size() < kMinRows) return;  // too few rows: keep the prior memory coefficients
  const Eigen::Index n = static_cast<Eigen::Index>(used.size());
  // Which side of a checkpointed peak applies depends on the coefficients: fit, re-pick, refit.
  for (int iter = 0; iter < kMemorySideIterations; ++iter) {
    const model::Coefficients basis = linear_basis(hw.c, hw.stack);
    Eigen::MatrixXd A(n, static_cast<Eigen::Index>(allocated.size()));
    Eigen::VectorXd b(n);
    for (Eigen::Index k = 0; k < n; ++k) {
      const Row& r = *used[static_cast<size_t>(k)];
      const double a = alloc[static_cast<size_t>(k)];
      A.row(k) = regressors(allocated, r.f, basis).transpose() / a;
      b(k) = (a - r.f.static_bytes) / a;
    }
    set_from_theta(allocated, nnls(A, b), hw.c);
  }
  if (ry.size() >= 2) {
    set_from_theta(reserved, fit_relative(rx, ry), hw.c);
  } else {  // no row measured both: reserved = allocated
    for (const model::Coefficient* c : reserved) c->of(hw.c) = c->in(hw.stack).prior;
  }
}

}  // namespace lorasim::calib::detail
