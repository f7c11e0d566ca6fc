// Which precision a training run uses on a device: the one policy the runner and every
// command share. No torch types here.
#pragma once
#include <string>

#include "calibrate/device.h"
#include "model/workload.h"

namespace lorasim::calib {

struct PrecisionChoice {
  model::Precision precision = model::Precision::fp32;  ///< what the runner trains in
  std::string note;  ///< why it differs from the request, or a caveat; "" when there is none
};

/// Resolves a requested precision ("auto", "bf16", "fp16" or "fp32") on `device`:
/// - the CPU trains in fp32 whatever is asked (its bf16/fp16 kernels are slow, and CPU runs
///   exist for tests and demos); the note says so when something else was asked;
/// - on CUDA, "auto" is bf16 where the GPU supports it and fp16 elsewhere (a T4), as
///   Hugging Face users choose; an explicit request is kept, with a note when bf16 is asked
///   of a GPU without it.
/// Throws InputError for an unknown name.
PrecisionChoice resolve_precision(const std::string& requested, const DeviceInfo& device);

/// The same for a precision already chosen (a library caller's workload).
PrecisionChoice resolve_precision(model::Precision requested, const DeviceInfo& device);

}  // namespace lorasim::calib
