// The training commands live in a second binary, lorasim-train, which links LibTorch;
// `lorasim` itself does not, so simulate answers in milliseconds instead of paying
// LibTorch's ~0.8 s of start-up. `lorasim calibrate ...` hands over to it.
#pragma once
#include <string>
#include <vector>

namespace lorasim::cli {

/// Replaces this process with lorasim-train (next to this binary) running `command args`.
/// Returns only on failure: throws InputError when lorasim-train is not there (a build
/// without LibTorch).
[[noreturn]] void exec_train_binary(const std::string& command, const std::vector<std::string>& args);

}  // namespace lorasim::cli
