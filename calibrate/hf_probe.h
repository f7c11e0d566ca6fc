// Runs the Python probe of the hf-peft stack (python/lorasim_hf/probe.py) on a plan and reads
// the measurement rows it streams back. The probe runs in the user's own Python, with the
// torch, transformers and peft they train with: what it measures is the stack they run.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "calibrate/hf_plan.h"
#include "calibrate/measurement.h"

namespace lorasim::calib {

struct ProbeOptions {
  std::string python = "python3";  ///< the interpreter that has torch, transformers and peft
  std::string device = "cuda";     ///< "cuda", "cuda:N" or "cpu"
  std::string work_dir;            ///< where plan files go (a private temporary directory)
  int warmup_steps = 1;
  int measure_steps = 3;
};

/// Called with each row as it arrives (runs done so far, runs planned).
using ProbeRowCallback = std::function<void(const Measurement& row, size_t done, size_t total)>;

/// Runs `plan`, one probe process per allocator mode and base (float, or quantized: `--quant`
/// and `--double-quant` from its runs), and returns the rows in arrival order. A plan with
/// quantized runs first checks that the Python has bitsandbytes (one line saying what to install).
/// Throws CalibrationError when the interpreter or a package is missing (the probe's own
/// one-line message), when the probe fails, or when it returns fewer rows than planned. Runs the
/// probe skipped (TRL's fused head without trl) count as returned and go to `skipped_runs`
/// ("label: why"), where given.
std::vector<Measurement> run_probe(const std::vector<HfPlannedRun>& plan, const ProbeOptions& opt,
                                   const ProbeRowCallback& on_row = {}, std::vector<std::string>* skipped_runs = nullptr);

/// Where the probe's package is found: $LORASIM_PYTHONPATH, else the source tree's python/
/// when lorasim runs from its build tree, else "" (the package must be installed).
std::string probe_python_path();

}  // namespace lorasim::calib
