#include "cli/forward.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "model/error.h"

namespace lorasim::cli {

void exec_train_binary(const std::string& command, const std::vector<std::string>& args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path train = (ec ? std::filesystem::path(".") : self.parent_path()) / "lorasim-train";
  if (::access(train.c_str(), X_OK) != 0)
    throw InputError("`lorasim " + command + "` runs training, which needs lorasim-train next to this binary (" +
                     train.string() + "): build it (cmake --build build --target lorasim-train; it needs LibTorch, "
                     "see scripts/install-deps.sh)" +
                     (command == "validate" ? std::string(", or compare with a file: --measurements FILE") : ""));
  std::vector<std::string> all = {train.string(), command};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(train.c_str(), argv.data());
  throw Error("cannot start " + train.string() + ": " + std::strerror(errno));
}

}  // namespace lorasim::cli
