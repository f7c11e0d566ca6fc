#include "cli/output_path.h"

#include <unistd.h>

#include <filesystem>

#include "calibrate/measurement_io.h"
#include "model/atomic_file.h"
#include "model/error.h"

namespace lorasim::cli {

void check_writable(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(flag + " needs a file name");
  const fs::path p(path);
  std::error_code ec;
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    // "afile/x.toml": name the file in the way rather than call the directory missing.
    for (fs::path d = dir; !d.empty() && d != d.parent_path(); d = d.parent_path())
      if (fs::exists(d, ec) && !fs::is_directory(d, ec))
        throw InputError(flag + " " + path + ": " + d.string() + " is a file, not a directory");
    throw InputError(flag + " " + path + ": directory " + dir.string() + " does not exist");
  }
  if (const std::string why = model::unwritable_reason(path); !why.empty())
    throw InputError(flag + " " + path + " " + why);
  if (model::written_in_place(path)) {
    if (::access(path.c_str(), W_OK) != 0) throw InputError(flag + " " + path + " is not writable");
    return;
  }
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + ": directory " + dir.string() + " is not writable");
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + " exists and is not writable");
}

void check_measurements_writable(const std::string& flag, const std::string& path) {
  check_writable(flag, path);
  try {
    calib::check_measurements_output(path);
  } catch (const InputError& e) {
    throw InputError(flag + ": " + e.what());
  }
}

}  // namespace lorasim::cli
