// The smallest use of the installed libraries: recommend a micro-batch x accumulation split
// for LoRA fine-tuning of Qwen3-1.7B on an H200 (a builtin profile, no files needed).
#include <cstdio>
#include <exception>

#include "hwprofiles/builtin.h"
#include "model/architecture.h"
#include "simulator/simulate.h"
#ifdef CONSUMER_WITH_CALIBRATE
#include "calibrate/device.h"
#endif

int main() {
  namespace ls = lorasim;
  try {
    ls::sim::Request request;
    request.workload.arch = ls::model::preset("qwen3-1.7b");
    request.workload.train.seq_len = 1024;
    request.hardware = ls::hw::builtin_profile("h200").hw;
    request.effective_batch = 32;

    const ls::sim::Result result = ls::sim::simulate(request);
    if (!result.recommended) {
      std::printf("no split fits in %.1f GiB\n", result.usable_memory_bytes / (1 << 30));
      return 1;
    }
    const ls::sim::Split& split = result.splits[*result.recommended];
    std::printf("recommended split: micro_batch=%lld accumulation=%lld step_time_s=%.4f\n",
                static_cast<long long>(split.micro_batch),
                static_cast<long long>(split.accumulation), split.step_time_s);
#ifdef CONSUMER_WITH_CALIBRATE
    std::printf("calibrate: LibTorch %s\n", ls::calib::torch_version().c_str());
#endif
    return 0;
  } catch (const std::exception& e) {  // lorasim::Error (InputError, ConfigError, ...)
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
