#include "calibrate/nnls.h"

#include <limits>
#include <vector>

namespace lorasim::calib {

Eigen::VectorXd nnls(const Eigen::MatrixXd& A_in, const Eigen::VectorXd& b, int max_iterations) {
  const Eigen::Index n = A_in.cols();
  // Unit-norm columns make the active-set tolerances meaningful for every column.
  Eigen::VectorXd scale = A_in.colwise().norm().transpose();
  for (Eigen::Index j = 0; j < n; ++j)
    if (scale(j) == 0) scale(j) = 1;
  const Eigen::MatrixXd A = A_in * scale.cwiseInverse().asDiagonal();

  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<size_t>(n), false);
  const double tol = 1e-12 * std::max(1.0, b.norm());

  auto solve_passive = [&](Eigen::VectorXd& z) {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[static_cast<size_t>(j)]) idx.push_back(j);
    z = Eigen::VectorXd::Zero(n);
    if (idx.empty()) return;
    Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(idx.size()));
    for (size_t k = 0; k < idx.size(); ++k) Ap.col(static_cast<Eigen::Index>(k)) = A.col(idx[k]);
    const Eigen::VectorXd zp = Ap.colPivHouseholderQr().solve(b);
    for (size_t k = 0; k < idx.size(); ++k) z(idx[k]) = zp(static_cast<Eigen::Index>(k));
  };

  for (int iter = 0; iter < max_iterations; ++iter) {
    const Eigen::VectorXd w = A.transpose() * (b - A * x);
    Eigen::Index best = -1;
    double best_w = tol;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<size_t>(j)] && w(j) > best_w) {
        best_w = w(j);
        best = j;
      }
    if (best < 0) break;  // KKT conditions hold
    passive[static_cast<size_t>(best)] = true;
    for (int inner = 0; inner < max_iterations; ++inner) {
      Eigen::VectorXd z;
      solve_passive(z);
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0) feasible = false;
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z until the first passive coefficient reaches zero.
      double alpha = std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0) alpha = std::min(alpha, x(j) / (x(j) - z(j)));
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && x(j) <= 1e-15) {
          passive[static_cast<size_t>(j)] = false;
          x(j) = 0;
        }
    }
  }
  return x.cwiseQuotient(scale);
}

}  // namespace lorasim::calib
