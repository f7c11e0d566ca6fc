// Non-negative least squares (Lawson & Hanson, 1974): min ||A x - b|| subject to x >= 0.
// The cost model's coefficients are physical rates and costs, so a negative value is
// never a better explanation of the data, only an overfit.
#pragma once
#include <Eigen/Dense>

namespace lorasim::calib {

/// Solves min ||A x - b||_2, x >= 0. Columns are scaled internally, so they may differ
/// by many orders of magnitude (FLOPs next to operator counts).
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iterations = 500);

}  // namespace lorasim::calib
