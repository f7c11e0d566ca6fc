// The profile tests' access to an embedded profile's TOML text, to edit one line of it.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "hwprofiles/builtin.h"

namespace lorasim::hw {

inline std::string builtin_text(const std::string& name) {
  for (const auto& p : builtin_profile_texts())
    if (p.name == name) return std::string(p.toml);
  ADD_FAILURE() << "no builtin " << name;
  return "";
}

}  // namespace lorasim::hw
