// A device's values: storage by the coefficient table's slots, and resolving one stack.
#include "model/hardware.h"

#include "model/error.h"
#include "model/training_stack.h"

namespace lorasim::model {

HardwareModel::HardwareModel() { complete_values(*this); }

const char* link_name(Link l) {
  switch (l) {
    case Link::nvlink: return "nvlink";
    case Link::pcie: return "pcie";
    case Link::gloo_cpu: return "gloo-cpu";
  }
  return "pcie";
}

Link parse_link(const std::string& text) {
  if (text == "nvlink") return Link::nvlink;
  if (text == "pcie") return Link::pcie;
  if (text == "gloo-cpu") return Link::gloo_cpu;
  throw InputError("unknown link " + quoted_excerpt(text) + ": expected nvlink or pcie", "link");
}

bool operator==(const Interconnect& a, const Interconnect& b) {
  return a.link == b.link && a.allreduce_gbps == b.allreduce_gbps && a.allreduce_latency_s == b.allreduce_latency_s;
}

void complete_values(HardwareModel& hw) {
  const std::vector<StoredValue>& stored = stored_values();
  for (size_t i = hw.values.size(); i < stored.size(); ++i) hw.values.push_back(stored[i].entry().prior);
}

StackOrigin& HardwareModel::origin(StackKind s) {
  if (static_cast<size_t>(s.index) >= origins.size()) origins.resize(static_cast<size_t>(s.index) + 1);
  return origins[static_cast<size_t>(s.index)];
}

const StackOrigin& HardwareModel::origin(StackKind s) const {
  static const StackOrigin prior;  // a stack registered after this model was built
  return static_cast<size_t>(s.index) < origins.size() ? origins[static_cast<size_t>(s.index)] : prior;
}

double HardwareModel::peak_tflops(Precision p) const {
  switch (p) {
    case Precision::bf16: return peak_bf16_tflops;
    case Precision::fp16: return peak_fp16_tflops;
    case Precision::fp32: return peak_fp32_tflops;
  }
  return 0;
}

namespace {
const Coefficient& row_named(std::string_view name) {
  const Coefficient* c = find_coefficient(name);
  if (!c) throw ConfigError("unknown coefficient '" + std::string(name) + "'");
  return *c;
}
}  // namespace

double HardwareModel::value(const Coefficient& row, StackKind stack) const {
  if ((!origin(stack).has_values || origin(stack).inherited.count(row.name)) && row.owned_by(stack))
    if (const char* base = training_stack(stack).base_stack())
      if (const TrainingStack* b = find_stack(base)) return value(row, b->kind());
  const int slot = row.slot[static_cast<size_t>(stack.index)];
  return slot >= 0 && static_cast<size_t>(slot) < values.size() ? values[static_cast<size_t>(slot)]
                                                                 : row.in(stack).prior;
}

double& HardwareModel::value(const Coefficient& row, StackKind stack) {
  const int slot = row.slot[static_cast<size_t>(stack.index)];
  if (slot >= 0 && static_cast<size_t>(slot) >= values.size()) complete_values(*this);
  if (slot < 0)
    throw ConfigError(std::string(row.name) + " is a fixed prior of the " + stack_name(stack) + " stack, not a value");
  return values[static_cast<size_t>(slot)];
}

double HardwareModel::value(std::string_view row, StackKind stack) const { return value(row_named(row), stack); }
double& HardwareModel::value(std::string_view row, StackKind stack) { return value(row_named(row), stack); }

std::string compute_capability(const HardwareModel& hw) {
  if (hw.compute_capability_major <= 0) return "";
  return std::to_string(hw.compute_capability_major) + "." + std::to_string(hw.compute_capability_minor);
}

void require_attention_support(const HardwareModel& hw, AttnImpl attn) {
  // FlashAttention 2's kernels are built for sm80 and newer (its README: Ampere, Ada, Hopper).
  constexpr int kFlashAttention2Major = 8;
  if (attn != AttnImpl::flash_attention_2 || hw.compute_capability_major <= 0 ||
      hw.compute_capability_major >= kFlashAttention2Major)
    return;
  throw InputError(std::string(attn_impl_name(attn)) + " needs a GPU of compute capability 8.0 (Ampere) or newer; the " +
                       hw.display_name + " is " + compute_capability(hw) +
                       ": use sdpa (PyTorch's fused attention, the default) or eager",
                   "attn_impl");
}

PriorErrors prior_errors(const HardwareModel& hw, StackKind stack) {
  if (hw.calibrated || hw.origin(stack).calibrated) return {};
  return {hw.value("expected_time_error"), hw.value("expected_memory_error"), hw.value("expected_memory_error_bytes")};
}

Coefficients resolve(const HardwareModel& hw, StackKind stack) {
  Coefficients c;
  for (const Coefficient& row : coefficient_table())
    if (row.field) c.*row.field = hw.value(row, stack);
  return c;
}

void store(const Coefficients& c, StackKind stack, HardwareModel& hw) {
  // Every row the stack owns is written, so a stack with a base now holds values of its own.
  for (const Coefficient& row : coefficient_table())
    if (row.field && row.owned_by(stack)) hw.value(row, stack) = c.*row.field;
  hw.origin(stack).has_values = true;
  hw.origin(stack).inherited.clear();
}

}  // namespace lorasim::model
