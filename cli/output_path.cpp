#include "cli/output_path.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "model/error.h"

namespace lorasim::cli {

void check_writable(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(flag + " needs a file name");
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw InputError(flag + " " + path + " is a directory: give a file name");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw InputError(flag + " " + path + ": directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + ": directory " + dir.string() + " is not writable");
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + " exists and is not writable");
}

}  // namespace lorasim::cli
