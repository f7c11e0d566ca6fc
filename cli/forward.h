// The training commands live in a second binary, lorasim-train, which links LibTorch;
// `lorasim` itself does not, so simulate answers in milliseconds instead of paying
// LibTorch's ~0.8 s of start-up. `lorasim calibrate ...` hands over to it. A `pip install .`
// builds no lorasim-train: every message here names what such an install can run instead.
#pragma once
#include <string>
#include <vector>

namespace lorasim::cli {

/// Whether lorasim-train is next to this binary (a build with LibTorch).
bool has_train_binary();

/// Replaces this process with lorasim-train (next to this binary) running `command args`.
/// Returns only on failure: throws InputError when lorasim-train is not there (a build
/// without LibTorch), naming `instead` (what this install can run in its place) and how to get it.
[[noreturn]] void exec_train_binary(const std::string& command, const std::vector<std::string>& args,
                                    const std::string& instead);

}  // namespace lorasim::cli
