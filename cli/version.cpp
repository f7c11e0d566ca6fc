#include "cli/version.h"

#ifdef LORASIM_WITH_CALIBRATE
#include "calibrate/device.h"
#else
#include "cli/forward.h"
#endif

namespace lorasim::cli {

std::string version_text() {
  std::string s = "lorasim " LORASIM_VERSION "\n";
#if defined(LORASIM_WITH_CALIBRATE)
  s += "LibTorch " + calib::torch_version() + ", CUDA support " + (calib::cuda_compiled() ? "compiled in" : "not compiled in") + "\n";
#else
#if defined(LORASIM_TORCH_VERSION)
  // What lorasim-train (the training commands) was built with, where it is still beside this binary.
  if (has_train_binary())
    return s + "LibTorch " + LORASIM_TORCH_VERSION + " (in lorasim-train), CUDA support " +
           (LORASIM_TORCH_CUDA_BUILD ? "compiled in" : "not compiled in") + "\n";
#endif
  // A pip install: what runs without lorasim's LibTorch runner, and what does not.
  s += "without lorasim-train (LibTorch): calibrate runs the hf-peft stack (your Transformers + PEFT, through "
       "Python); train and live validate are unavailable (validate --measurements works)\n";
#endif
  return s;
}

}  // namespace lorasim::cli
