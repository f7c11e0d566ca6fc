// libFuzzer target: Hugging Face config.json (model::parse_hf_config). A ConfigError is the
// expected rejection; any other exception, crash or sanitizer report is a finding. An
// accepted architecture must pass its own validation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/error.h"
#include "model/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lorasim::model::Architecture arch;
  try {
    arch = lorasim::model::parse_hf_config(text, "fuzz/config.json");
  } catch (const lorasim::Error&) {
    return 0;
  }
  try {
    arch.validate();
  } catch (const lorasim::Error&) {
    std::abort();  // accepted, yet invalid
  }
  return 0;
}
