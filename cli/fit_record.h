// The profile after a fit, built one way for the three commands that fit (`fit`, `calibrate`,
// `calibrate --stack hf-peft`): its coefficients and expected errors, its provenance, the
// [calibration] record, and the text that says what the fit moved.
#pragma once
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/fit.h"
#include "hwprofiles/profile.h"

namespace lorasim::cli {

/// What a command knows of a fit that the fit itself does not: where the rows came from.
struct FitRecord {
  std::string source;      ///< the provenance line: [profile].source, or [stack.hf-peft].source for hf-peft rows
  std::string base;        ///< the profile the fit started from, as its source names it
  std::string key_prefix;  ///< before every [calibration] key ("hf_peft_": the stack's lines beside the GPU's)
  std::vector<std::pair<std::string, hw::CalibrationValue>> facts;  ///< the command's own lines, first
};

/// Applies `rep` to `profile`: the fitted hardware with its expected errors and `record.source`;
/// the [calibration] record is started afresh for a fit of the GPU (lorasim's runner: the base's
/// record describes other runs) and kept, with the fit's lines set, for hf-peft rows (the GPU
/// half is the base's). The fit's lines: the residuals, anchored or full, the base, the stack,
/// each identified group's scale and the names of the coefficients it moved.
void record_fit(hw::Profile& profile, const calib::FitReport& rep, const FitRecord& record);

/// What the fit did, as every fitting command prints it: the residual table, the step-time
/// (and peak-memory) errors, and each coefficient moved and group scaled or kept.
void print_fit(std::ostream& out, const calib::FitReport& rep, const std::string& base);

}  // namespace lorasim::cli
