// `lorasim --version`: what this binary is and what it was built with.
#pragma once
#include <string>

namespace lorasim::cli {
std::string version_text();
}
