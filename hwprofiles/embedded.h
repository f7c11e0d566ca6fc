// Private to hwprofiles/: the interface of the source file that cmake/embed_profiles.cmake
// generates in the build directory from hwprofiles/*.toml.
#pragma once
#include <cstddef>

namespace lorasim::hw::detail {

struct EmbeddedFile {
  const char* file_name;       ///< "h200.toml"
  const unsigned char* data;   ///< the file's bytes, followed by a NUL not counted in size
  std::size_t size;
};

extern const EmbeddedFile kEmbeddedProfiles[];
extern const std::size_t kEmbeddedProfileCount;

}  // namespace lorasim::hw::detail
