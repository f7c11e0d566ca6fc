// Private to the fitter (fit.cpp, fit_time.cpp, fit_memory.cpp) and its tests: the rows, the
// design matrices built from model/coefficients.h, and the named constants of the fit.
#pragma once
#include <Eigen/Dense>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurement.h"
#include "model/coefficients.h"
#include "model/cost_model.h"
#include "model/hardware.h"

namespace lorasim::calib::detail {

/// A fitted value for the fit's notes, to three significant figures.
inline std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// Too few rows to determine the coefficients: fit_profile refuses below this many.
inline constexpr size_t kMinRows = 3;
/// Host and device timed apart on at least this many rows (one per depth and a spare)...
inline constexpr size_t kMinSplitRows = 4;
/// ...at operator counts at least 20% apart: closer depths cannot tell the host's fixed cost
/// from its per-operator cost, and the joint fit is then the better estimate.
inline constexpr double kMinOpsSpread = 1.2;
/// A row counts as host-bound for the host line when the model puts its device side under
/// half the measured time: the line is extrapolated to full depth, so only rows whose time is
/// clearly host time may set it.
inline constexpr double kHostBoundForHostLine = 0.5;
/// For the recompute share a looser test: checkpointed rows carry the only information about
/// it and run closer to balance (the recomputing forward adds device work too). Both stay:
/// one threshold for both changes profiles fitted from the committed measurements (at 0.5
/// the pooled H200 profile's recompute share, at 0.8 the single-lease calibrations' host line).
inline constexpr double kHostBoundForRecomputeShare = 0.8;
/// The recompute share is a ratio of per-operator costs; a median above 2 says the host-bound
/// rows were not host-bound, not that a forward without autograd costs more.
inline constexpr double kMaxRecomputeHostShare = 2.0;
/// The joint fit's second starting assignment: micro-batches up to this size host-bound
/// (a fixed host cost per micro-batch dominates the smallest ones).
inline constexpr int64_t kHostBoundStartMicroBatch = 2;
/// Iterations of the fits that alternate a classification and a linear solve; they stop
/// early once the classification is stable.
inline constexpr int kJointIterations = 30;
inline constexpr int kOptimizerIterations = 10;
inline constexpr int kMemorySideIterations = 3;

/// Anchored fits (fit_anchored.cpp). A group's scale moves only if, at the fitted scales,
/// the group makes at least this share of some row's predicted time: under max(H, D) a side
/// hidden on every row leaves no trace in the step times.
inline constexpr double kMinDominantShare = 0.5;
/// ...and only if the design of the groups that move, its columns at unit norm, has a
/// smallest-over-largest singular value of at least this: below it a 1% error in the rows
/// could move a scale by more than 10%, and the rows cannot tell the groups apart.
inline constexpr double kMinConditioning = 0.1;

/// A memory group moves only if the base's term is at least this share of some row's peak.
inline constexpr double kMinMemoryShare = 0.1;

/// The hf-peft stack's full fit needs rows at two or more depths (host per micro-batch vs per
/// operator) and this many rows in all; fewer refine the stack's terms by group scales.
inline constexpr size_t kMinStackRows = 8;
/// The hf-peft stack's host cost sits in the Python forward (module calls, hooks) more than in
/// the autograd engine's backward, so a recomputed forward operator may cost several average
/// operators; above this the checkpointed rows were not host-bound.
inline constexpr double kMaxStackRecomputeHostShare = 5.0;

/// What the fitted bound of the allocator's varying-shape hold adds to the largest share a row
/// of many widths needed (a share of the widest micro-batch's activations): the plan's runs are
/// a few dozen micro-batches, an epoch meets more shapes and the default allocator fragments
/// further; 0.1 is about the spread of the shares of lengths-run1's default-allocator rows.
inline constexpr double kVaryingBoundMargin = 0.1;

/// One usable measurement and its regressors.
struct Row {
  const Measurement* m;
  model::Features f;
  /// Micro-batches of the step that add into gradients (all but the first).
  double accumulating_share() const {
    return static_cast<double>(m->accumulation - 1) / static_cast<double>(m->accumulation);
  }
  /// The allocated peak the memory fits target: the measured one, else the reserved peak where
  /// only that was measured (a file from another framework); kNotMeasured without either.
  double allocated_target() const {
    return measured(m->peak_allocated_bytes) ? m->peak_allocated_bytes : m->peak_reserved_bytes;
  }
};

/// A design matrix's columns: the coefficients of `terms` that `stack`'s linear fit moves, in
/// table order.
using Columns = std::vector<const model::Coefficient*>;
Columns columns(std::initializer_list<model::Term> terms, model::StackKind stack);

/// `c` as the linear fit sees it: coefficients fitted by their own step at their priors and
/// Form::ratio ones at 0 (their own column carries that part of the term), so that every
/// feature is a plain regressor.
model::Coefficients linear_basis(const model::Coefficients& c, model::StackKind stack);

/// One row of a design: each column's feature at `basis` (from linear_basis).
Eigen::VectorXd regressors(const Columns& cols, const model::Features& f, const model::Coefficients& basis);

/// Sets each column's coefficient from its fitted theta (model::Form says how).
void set_from_theta(const Columns& cols, const Eigen::VectorXd& theta, model::Coefficients& c);

/// Whole-step regressors of the time columns: `a` micro-batches (a - 1 of them accumulating)
/// and the optimizer. `host`, `device`: which sides count (a host-bound step shows only the
/// host's, a synchronous device both).
Eigen::VectorXd step_regressors(const Columns& cols, const Row& r, const model::Coefficients& basis, bool host,
                                bool device);

/// Weighted NNLS: rows scaled by 1/y so that residuals are relative.
Eigen::VectorXd fit_relative(const std::vector<Eigen::VectorXd>& x, const std::vector<double>& y);
double median(std::vector<double> v);

// Each fit moves the values of the view `m` (the base resolved for the rows' stack); fit_profile
// stores back the rows the stack owns.
void fit_time(const std::vector<Row>& rows, model::StackModel& m);
void fit_memory(const std::vector<Row>& rows, model::StackModel& m);
/// Scales groups of `m`'s coefficients (the base) to the rows; appends every group to `report`.
void fit_anchored(const std::vector<Row>& rows, model::StackModel& m, std::vector<GroupScale>& report);

// ---- a stack's own rows (fit_stack.cpp) ----
/// The stack every row is of; throws for a mix.
model::StackKind stack_of(const std::vector<Row>& rows);
/// Whether the rows identify every row of a stack's own (the calibration plan's rows do).
bool identifies_stack(const std::vector<Row>& rows);
/// Fits the stack's host line, recompute share, device scales, optimizer host terms, memory
/// multipliers and allocator slack on the view (the base resolved for the stack). Returns whether
/// the fused-head rows were left out of the time terms (enough rows without it), so that its
/// own cost can be fitted after.
bool fit_stack_full(const std::vector<Row>& rows, model::StackModel& view);

// One row's step as the base sees it. The step is homogeneous in the two scales:
// T = max(kh H, kd D) + coupling * min(kh H, kd D) (overlap = max) or kh H + kd D (sum).
struct StepParts {
  double host = 0, device = 0, coupling = 0, y = 0;
};

/// A row's predicted host and device seconds per step at the base `hw` (calibrate/fit_step_parts.cpp):
/// at its seq_len, or for a row of many padded widths (padded_lengths) the mean over its timed
/// micro-batches of each width's, as validate predicts it (simulator/measured_lengths.h); and the
/// step time the scales must explain, less what the row's new shapes cost (new_shape_s is not a
/// scaled coefficient).
StepParts step_parts(const Row& r, const model::StackModel& hw);

// ---- data of many lengths and the fused head (fit_shapes.cpp) ----
/// Whether the row trained on micro-batches of more than one padded width.
bool varied_widths(const Row& r);
/// A row's predicted step without new shapes: width by width (step_parts), host and device combined.
double steady_step_s(const Row& r, const model::StackModel& view);
/// A row's activation bytes at its widest micro-batch (what the varying shares multiply) and its
/// predicted reserved peak and worst case there, without the allocator's varying-shape hold.
struct VariedMemory {
  double activation_bytes = 0, reserved_bytes = 0, worst_bytes = 0;
};
VariedMemory varied_memory(const Row& r, const model::StackModel& view);
/// Fits (where the stack owns them and the rows identify them) fused_head_s_per_token (when
/// `fused_head`: the full fit, whose ordinary rows fitted the unfused head), new_shape_s and
/// the varying shares and bounds of each allocator mode; one note per fitted term.
void fit_shapes(const std::vector<Row>& rows, model::StackModel& view, bool fused_head, std::vector<std::string>& notes);

// ---- a quantized base (fit_quant.cpp) ----
/// A quantized-base term moves only with at least this many rows on its side (host- or
/// device-bound): one row would be fitted exactly, whatever its noise.
inline constexpr size_t kMinQuantRows = 2;
/// Whether the row's frozen base was quantized (its `quant` column).
bool quantized(const Row& r);
/// Fits (where the stack owns them and the rows identify them) host_per_quant_call_s from the
/// host-bound quantized rows and dequant_s_per_weight_byte from the device-bound ones, the view's
/// other terms held; one note per term.
void fit_quant(const std::vector<Row>& rows, model::StackModel& view, std::vector<std::string>& notes);

}  // namespace lorasim::calib::detail
