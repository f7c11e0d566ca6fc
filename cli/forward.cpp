#include "cli/forward.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "model/error.h"

namespace lorasim::cli {
namespace {

std::filesystem::path train_binary() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : self.parent_path()) / "lorasim-train";
}

}  // namespace

bool has_train_binary() { return ::access(train_binary().c_str(), X_OK) == 0; }

void exec_train_binary(const std::string& command, const std::vector<std::string>& args, const std::string& instead) {
  const std::filesystem::path train = train_binary();
  if (::access(train.c_str(), X_OK) != 0)
    throw InputError("`lorasim " + command + "` here runs lorasim's LibTorch runner, lorasim-train, which this "
                     "install lacks (" + train.string() + "): " + instead +
                     "; or add it (pip install --no-build-isolation -C cmake.define.LORASIM_WITH_TORCH=ON ., or "
                     "cmake --build build --target lorasim-train; both need LibTorch)");
  std::vector<std::string> all = {train.string(), command};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(train.c_str(), argv.data());
  throw Error("cannot start " + train.string() + ": " + std::strerror(errno));
}

}  // namespace lorasim::cli
