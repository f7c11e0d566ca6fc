// The cost model's view of a device: datasheet figures plus the coefficient table's values
// (model/coefficients.h) for every stack. hwprofiles/ reads and writes these from TOML;
// calibrate/ fits them; model::resolve picks one stack's values for the equations.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/coefficients.h"
#include "model/stack.h"
#include "model/workload.h"

namespace lorasim::model {

/// How host dispatch and device work combine within a micro-batch.
enum class Overlap {
  max,  ///< asynchronous device (CUDA): the slower of the two sets the pace
  sum,  ///< synchronous device (CPU): host and compute time add
};

/// The link between the GPUs of one host that data-parallel training all-reduces over. gloo_cpu
/// is no GPU link: processes of one CPU host all-reducing through Gloo (loopback TCP), what an
/// interconnect calibration on the CPU measures; it has no prior and is never taken for a GPU's.
enum class Link { nvlink, pcie, gloo_cpu };
const char* link_name(Link l);  ///< "nvlink", "pcie", "gloo-cpu"
/// Parses "nvlink", "pcie", "gloo-cpu"; throws InputError (quantity "link") otherwise.
Link parse_link(const std::string& text);

/// A profile's [interconnect] table (docs/profile-schema.md): what a ring all-reduce between
/// this GPU and its peers costs (simulator/data_parallel.h has the equations).
struct Interconnect {
  Link link = Link::pcie;
  double allreduce_gbps = 0;       ///< bus bandwidth, GB/s (1e9 bytes/s), as nccl-tests reports it
  double allreduce_latency_s = 0;  ///< per ring step (2(N-1) steps per all-reduced bucket)
  bool calibrated = false;         ///< fitted from timed all-reduces (calibrate/fit_interconnect.h), not a prior
  std::string source;              ///< how it was measured, where calibrated (backend, processes, sizes, date)
};
/// Equal link and figures (not provenance).
bool operator==(const Interconnect& a, const Interconnect& b);

/// Where a stack's own section ([stack.NAME]) came from.
struct StackOrigin {
  bool calibrated = false;        ///< fitted from this stack's runs on this GPU
  std::string source = "prior";   ///< where the values came from, for notes and files
  /// The profile holds values of the stack's own (its section, or a fit stored them); a stack
  /// with a base (TrainingStack::base_stack) reads its base's values until then.
  bool has_values = false;
  /// Rows of a stack with a base that its section does not set: they read the base's value, as
  /// the whole stack does without a section, so a later calibration of the base reaches them.
  std::set<std::string> inherited;
};

struct HardwareModel {
  HardwareModel();  ///< every stored value at its prior

  std::string name;                  ///< short name: "h200", "cpu"
  std::string display_name;          ///< "NVIDIA H200 SXM 141GB"
  int64_t memory_bytes = 0;          ///< total device memory
  bool bf16_supported = true;
  /// CUDA compute capability from the datasheet ("8.0": major 8, minor 0); 0.0 when unknown
  /// (the CPU, a GPU no profile names): what decides which kernels it can run.
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  double peak_bf16_tflops = 0;       ///< dense tensor-core peak, datasheet
  double peak_fp16_tflops = 0;
  double peak_fp32_tflops = 0;       ///< plain fp32 (no TF32)
  double hbm_bandwidth_gbps = 0;     ///< datasheet memory bandwidth
  Precision coefficients_precision = Precision::bf16;  ///< precision the rates were fitted in
  Overlap overlap = Overlap::max;
  bool calibrated = false;           ///< fitted from measurements (true) or a datasheet prior
  /// One number per model::stored_values() entry: the device's rows, lorasim's runner's and
  /// each stack's own.
  std::vector<double> values;
  std::vector<StackOrigin> origins;  ///< per stack (StackKind::index), for those with a section of their own
  /// The profile's [interconnect] table; empty: it has none, and data-parallel predictions use
  /// the prior of the link kind (simulator/data_parallel.h).
  std::optional<Interconnect> interconnect;

  /// `row`'s value as `stack` reads it (its prior when the stack stores none; its base stack's
  /// value where the stack has a base and this profile holds none of its own values). Throws
  /// ConfigError for an unknown row.
  double value(std::string_view row, StackKind stack = StackKind::lorasim) const;
  /// The stored value `stack` reads for `row`; throws ConfigError when it stores none (a fixed prior).
  double& value(std::string_view row, StackKind stack = StackKind::lorasim);
  double value(const Coefficient& row, StackKind stack) const;
  double& value(const Coefficient& row, StackKind stack);
  StackOrigin& origin(StackKind s);
  const StackOrigin& origin(StackKind s) const;

  /// Datasheet peak for `p`, TFLOP/s (0 when unknown).
  double peak_tflops(Precision p) const;
};

/// The errors of a prediction that nothing measured on this GPU backs: neither the device's
/// rows nor `stack`'s own were fitted here, so every term rests on the datasheet rule (or on
/// another GPU's calibration) and the profile's expected errors ([profile] expected_time_error,
/// expected_memory_error) are the honest width of its step-time range and the margin of its worst
/// case (docs/cost-model.md, "Priors"). Both 0 once either half was calibrated: then the stack's
/// spreads and expected memory error, which the measurements set, are the width.
struct PriorErrors {
  double time = 0;    ///< relative step-time error: the least half-width of the range
  double memory = 0;  ///< relative error of the variable memory: the least share of it the worst case adds
  /// The device term a datasheet cannot know (its kernels' and libraries' memory outside the
  /// count), added whole to the worst case: on a GPU lorasim has not calibrated, the measured
  /// excess over the count was a near-constant number of bytes, not a proportion.
  double memory_bytes = 0;
};
PriorErrors prior_errors(const HardwareModel& hw, StackKind stack);

/// "7.5", or "" when unknown.
std::string compute_capability(const HardwareModel& hw);
/// Throws InputError (quantity "attn_impl") when `hw` cannot run `attn`: FlashAttention 2 needs
/// compute capability 8.0 (Ampere) or newer. A device of unknown capability is not refused.
void require_attention_support(const HardwareModel& hw, AttnImpl attn);

/// Appends the priors of rows added to the table since `hw` was built (model::add_coefficient).
void complete_values(HardwareModel& hw);

/// The table's values for `stack` on `hw`: what every equation of that stack reads.
Coefficients resolve(const HardwareModel& hw, StackKind stack);
/// Writes back the rows `stack` stores itself (Coefficient::owned_by) from `c`.
void store(const Coefficients& c, StackKind stack, HardwareModel& hw);

}  // namespace lorasim::model
