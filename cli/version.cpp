#include "cli/version.h"

#ifdef LORASIM_WITH_CALIBRATE
#include "calibrate/device.h"
#endif

namespace lorasim::cli {

std::string version_text() {
  std::string s = "lorasim " LORASIM_VERSION "\n";
#ifdef LORASIM_WITH_CALIBRATE
  s += "LibTorch " + calib::torch_version() + ", CUDA support " + (calib::cuda_compiled() ? "compiled in" : "not compiled in") + "\n";
#else
  s += "built without LibTorch: calibrate, train and validate are unavailable\n";
#endif
  return s;
}

}  // namespace lorasim::cli
