// bench_simulate: how fast the simulator sweeps the splits of an effective batch.
// Times sim::simulate() end to end (validation, cost-model setup, every split, ranking, notes)
// and, separately, the per-split cost-model evaluation alone, and prints ns per split as a
// Markdown table. Target: under 1 us per split, so even B = 720720 (240 splits) is instant.
//
// usage: bench_simulate [--gpu NAME] [--min-time-s SECONDS]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hwprofiles/builtin.h"
#include "model/architecture.h"
#include "model/cost_model.h"
#include "simulator/simulate.h"
#include "simulator/splits.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace lorasim;

/// Keeps the compiler from dropping work whose result is otherwise unused.
volatile double g_sink = 0;

struct Figure {
  int64_t calls = 0;
  double ns_per_call = 0;  ///< median over rounds
};

/// Calls `fn` in rounds of growing size until a round lasts `min_time_s`, then takes the
/// median of 7 such rounds: robust to a noisy neighbour on a shared machine.
template <typename Fn>
Figure measure(Fn&& fn, double min_time_s) {
  int64_t n = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) fn();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= min_time_s / 7) break;
    n *= 2;
  }
  std::vector<double> per_call;
  for (int round = 0; round < 7; ++round) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) fn();
    per_call.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                       static_cast<double>(n));
  }
  std::sort(per_call.begin(), per_call.end());
  return {n * 7, per_call[per_call.size() / 2]};
}

sim::Request request(const model::HardwareModel& hw, int64_t effective_batch) {
  sim::Request r;
  r.workload.arch = model::preset("qwen3-1.7b");
  r.workload.train.seq_len = 512;
  r.hardware = hw;
  r.effective_batch = effective_batch;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string gpu = "h200";
  double min_time_s = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gpu") && i + 1 < argc) gpu = argv[++i];
    else if (!std::strcmp(argv[i], "--min-time-s") && i + 1 < argc) min_time_s = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_simulate [--gpu NAME] [--min-time-s SECONDS]\n");
      return 2;
    }
  }
  const model::HardwareModel hw = hw::builtin_profile(gpu).hw;

  std::printf("| measured | effective batch | splits | calls | ns per call | ns per split |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  for (int64_t B : {int64_t{1024}, int64_t{720720}}) {
    const sim::Request req = request(hw, B);
    const std::vector<int64_t> splits = sim::divisors(B);
    const double n_splits = static_cast<double>(splits.size());

    // Everything `lorasim simulate` asks of the library for one command.
    const Figure whole = measure(
        [&] {
          const sim::Result r = sim::simulate(req);
          g_sink = g_sink + r.splits.back().step_time_s;
        },
        min_time_s);
    std::printf("| sim::simulate() | %lld | %zu | %lld | %.0f | %.1f |\n", static_cast<long long>(B),
                splits.size(), static_cast<long long>(whole.calls), whole.ns_per_call,
                whole.ns_per_call / n_splits);

    // The cost model alone: what each extra split costs once the workload is set up.
    const model::CostModel cost(req.workload, req.hardware);
    const Figure core = measure(
        [&] {
          double acc = 0;
          for (int64_t b : splits) {
            acc += cost.step_time_s(b, B / b);
            acc += cost.memory(b).peak_reserved_bytes;
          }
          g_sink = g_sink + acc;
        },
        min_time_s);
    std::printf("| cost model per split | %lld | %zu | %lld | %.0f | %.1f |\n", static_cast<long long>(B),
                splits.size(), static_cast<long long>(core.calls), core.ns_per_call,
                core.ns_per_call / n_splits);
  }
  return 0;
}
