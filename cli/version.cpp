#include "cli/version.h"

#ifdef LORASIM_WITH_CALIBRATE
#include "calibrate/device.h"
#endif

namespace lorasim::cli {

std::string version_text() {
  std::string s = "lorasim " LORASIM_VERSION "\n";
#if defined(LORASIM_WITH_CALIBRATE)
  s += "LibTorch " + calib::torch_version() + ", CUDA support " + (calib::cuda_compiled() ? "compiled in" : "not compiled in") + "\n";
#elif defined(LORASIM_TORCH_VERSION)
  // What lorasim-train (the training commands) was built with.
  s += std::string("LibTorch ") + LORASIM_TORCH_VERSION + " (in lorasim-train), CUDA support " +
       (LORASIM_TORCH_CUDA_BUILD ? "compiled in" : "not compiled in") + "\n";
#else
  s += "built without LibTorch: calibrate, train and live validate are unavailable\n";
#endif
  return s;
}

}  // namespace lorasim::cli
