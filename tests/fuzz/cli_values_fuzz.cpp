// libFuzzer target: command-line values (cli::parse_int, parse_real, parse_bytes, parse_format,
// model::parse_targets, model::parse_precision). The first byte picks the parser (its value
// mod 6, so the seeds start with '0'..'5'), the rest is the flag's text. An InputError is the
// expected rejection; any other exception, crash or sanitizer report is a finding, and so is
// an accepted value outside the range the caller asked for.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/args.h"
#include "model/error.h"
#include "model/lora.h"
#include "model/workload.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void parse_one(uint8_t which, const std::string& text) {
  namespace cli = lorasim::cli;
  namespace model = lorasim::model;
  switch (which % 6) {
    case 0: {
      const int64_t min = 1;
      check(cli::parse_int("--seq-len", text, min) >= min);
      break;
    }
    case 1: {
      const double v = cli::parse_real("--lora-alpha", text, 1e-9, 1e9);
      check(std::isfinite(v) && v >= 1e-9 && v <= 1e9);
      break;
    }
    case 2:
      check(cli::parse_bytes("--memory", text) > 0);
      break;
    case 3:
      cli::parse_format(text);
      break;
    case 4: {
      const auto targets = model::parse_targets(text);
      check(!targets.empty() && targets.size() <= model::kAllTargets.size());
      check(std::is_sorted(targets.begin(), targets.end()));
      check(std::adjacent_find(targets.begin(), targets.end()) == targets.end());
      break;
    }
    case 5:
      model::parse_precision(text);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    parse_one(data[0], text);
  } catch (const lorasim::Error&) {
  }
  return 0;
}
