// The Trainer's state and its training step (private to calibrate/: torch types), shared by
// runner.cpp (the Trainer's API, its test hooks and data-parallel ranks) and kept apart from it
// for size.
#pragma once
#include "calibrate/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <random>

#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef LORASIM_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "calibrate/length_sampler.h"
#include "calibrate/lora_decoder.h"
#include "calibrate/memory_meter.h"
#include "calibrate/precision.h"
#include "calibrate/process_group_torch.h"
#include "calibrate/run_checks.h"
#include "calibrate/seen_shapes.h"
#include "calibrate/step_timer.h"
#include "calibrate/token_batch.h"
#include "model/error.h"

namespace lorasim::calib {

namespace runner_detail {

#ifdef LORASIM_TORCH_CUDA
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
#endif

inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

inline double mean(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

inline torch::ScalarType scalar_type(model::Precision p) {
  switch (p) {
    case model::Precision::bf16: return torch::kBFloat16;
    case model::Precision::fp16: return torch::kHalf;
    case model::Precision::fp32: return torch::kFloat32;
  }
  return torch::kFloat32;
}

inline bool is_out_of_memory(const std::string& message) {
  return message.find("out of memory") != std::string::npos ||
         message.find("OutOfMemory") != std::string::npos;
}

// Restores "no limit" however a run ends.
struct LimitGuard {
  MemoryMeter& meter;
  LimitGuard(MemoryMeter& m, int64_t bytes) : meter(m) { meter.set_limit(bytes); }
  ~LimitGuard() { meter.set_limit(0); }
};

}  // namespace runner_detail

struct Trainer::Impl {
  model::Workload workload;
  DeviceInfo info;
  torch::Device device;
  torch::ScalarType dtype;
  std::unique_ptr<MemoryMeter> memory;
  LoraDecoder model{nullptr};
  std::vector<torch::Tensor> adapters;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  Data data = Data::random;
  std::mt19937_64 data_rng;
  std::vector<torch::Tensor> base_copy;
  double sleep_cycles_per_s = 0;  // CUDA: rate of at::cuda::sleep, measured once
  ProcessGroup* group = nullptr;  // data parallel: this rank's group (Trainer::join); null: alone
  std::string shape_kind;  // the kernels' kind of this model (calibrate/seen_shapes.h)
  ShapeTally shapes{""};   // the current run's new shapes; every forward is seen

  Impl(const model::Workload& w, DeviceInfo device_info, uint64_t seed)
      : workload(w),
        info(std::move(device_info)),
        device(info.spec),
        dtype(runner_detail::scalar_type(workload.train.precision)),
        data_rng(seed ^ 0x9e3779b97f4a7c15ULL),
        shape_kind(calib::shape_kind(workload, info.spec)) {
#ifdef LORASIM_TORCH_CUDA
    // Expandable segments map memory in pages instead of caching whole blocks, so reserved
    // memory stays within a few MiB of allocated: without them the caching allocator at
    // times holds one extra fp32 logits buffer (gigabytes), depending on allocation order,
    // which no cost model can predict. A user's own setting is kept.
    if (info.is_cuda) ::setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 0);
#endif
    // The meter comes first: on the CPU it installs the counting allocator, which must see
    // the weights allocated next.
    memory = MemoryMeter::for_device(info.is_cuda, device.has_index() ? device.index() : 0);
    torch::manual_seed(seed);
    model = LoraDecoder(workload, device, dtype);
    adapters = model->adapter_parameters();
    optimizer = std::make_unique<torch::optim::AdamW>(
        adapters, torch::optim::AdamWOptions(1e-4).weight_decay(0));
  }

  TokenBatch next_batch(int64_t b, int64_t s, LengthSampler* sampler, BatchRecord* record = nullptr) {
    if (group && group->size() > 1) {
      // Every rank draws the whole micro-batch of all ranks and keeps its own rows, as a
      // DistributedSampler deals one order out: N ranks of b see what one process of b x N sees.
      const TokenBatch all = next_token_batch(b * group->size(), s, sampler, record, workload.arch.vocab_size,
                                              data == Data::learnable, data_rng, device);  // (b N, s)
      return {all.ids.narrow(0, group->rank() * b, b), all.labels.narrow(0, group->rank() * b, b)};
    }
    return next_token_batch(b, s, sampler, record, workload.arch.vocab_size, data == Data::learnable, data_rng, device);
  }

  // One micro-batch as HF's Trainer runs it: forward, loss / a, backward. No host sync.
  torch::Tensor micro_batch(const TokenBatch& batch, int64_t accumulation) {
    shapes.see(batch.ids.size(0), batch.ids.size(1));
    const auto logits = model->forward(batch.ids);  // (b, s, vocab)
    const auto loss = LoraDecoderImpl::causal_lm_loss(logits, batch.labels) / static_cast<double>(accumulation);
    loss.backward();
    return loss.detach();
  }

  // zero_grad(set_to_none=True), PyTorch 2.x's default and what HF's Trainer gets: the next
  // step's first backward allocates fresh gradients instead of adding into zeros.
  void clear_gradients() {
    for (auto& p : adapters) p.mutable_grad() = torch::Tensor();
  }

  void optimizer_step() {
    optimizer->step();
    clear_gradients();
  }

  // After a step that did not finish: every activation died with the stack; what is left is
  // gradients and the allocator's cache.
  void release_step() {
    clear_gradients();
    synchronize();
    memory->release_cache();
  }

  void synchronize() {
#ifdef LORASIM_TORCH_CUDA
    if (info.is_cuda) torch::cuda::synchronize(device.index());
#endif
  }

  // Polled before every micro-batch, so an interrupt waits for one micro-batch at most.
  void check_stop(const RunSpec& spec) const {
    if (spec.should_stop && spec.should_stop()) throw RunInterrupted("training run interrupted");
  }

  // One optimizer step as HF's Trainer runs it: `a` micro-batches of forward, loss / a and
  // backward, the gradients accumulating in .grad, then AdamW and zero_grad. No host sync
  // inside the step; the timer marks its phases.
  StepTiming train_step(const RunSpec& spec, int64_t b, int64_t a, int64_t s, LengthSampler* sampler,
                        BatchRecord* record = nullptr) {
    std::vector<TokenBatch> batches;  // a x (b, s), drawn before the clock starts
    for (int64_t i = 0; i < a; ++i) batches.push_back(next_batch(b, s, sampler, record));
    auto loss_sum = torch::zeros({}, torch::TensorOptions().device(device).dtype(torch::kFloat32));
    StepTimer timer(info.is_cuda, device.has_index() ? device.index() : 0);
    timer.start();
    for (const auto& ids : batches) {
      check_stop(spec);
      loss_sum += micro_batch(ids, a);
      timer.micro_batch_done();
    }
    timer.micro_batches_done();
    // Data parallel: the gradients averaged once per optimizer step, after the last micro-batch
    // (DDP under no_sync; not overlapped with that backward), inside the optimizer's phase.
    if (group) average_gradients(*group, adapters);
    optimizer_step();
    timer.step_done();
    StepTiming t = timer.timing(a);
    t.loss = group ? average_over_ranks(*group, loss_sum.item<double>(), device) : loss_sum.item<double>();
    return t;
  }

#ifdef LORASIM_TORCH_CUDA
  double sleep_rate() {
    if (sleep_cycles_per_s > 0) return sleep_cycles_per_s;
    constexpr int64_t kCycles = 20'000'000;  // about 10 ms on a 2 GHz GPU
    for (int i = 0; i < 2; ++i) {  // the first call may pay for loading the kernel
      synchronize();
      at::cuda::CUDAEvent a(cudaEventDefault), b(cudaEventDefault);
      a.record();
      at::cuda::sleep(kCycles);
      b.record();
      b.synchronize();
      sleep_cycles_per_s = static_cast<double>(kCycles) / (a.elapsed_time(b) / 1e3);
    }
    return sleep_cycles_per_s;
  }
#endif

  // Host dispatch vs device execution of one micro-batch. The GPU is kept busy by a sleep
  // kernel while the host enqueues the whole micro-batch, so the host time is pure dispatch
  // and the events (e0 completes when the sleep ends) bracket pure GPU execution.
  void measure_host_device(const RunSpec& spec, int64_t b, int64_t a, int64_t s, int repeats, LengthSampler* sampler,
                           RunResult& r) {
#ifdef LORASIM_TORCH_CUDA
    const double rate = sleep_rate();
    double expected_host_s = std::max(r.micro_batch_time_s, 1e-3);  // wall >= host
    std::vector<double> host, dev;
    for (int rep = 0; rep < repeats; ++rep) {
      check_stop(spec);
      const TokenBatch ids = next_batch(b, s, sampler);
      bool measured = false;
      for (int attempt = 0; attempt < 2 && !measured; ++attempt) {
        const double sleep_s = (attempt == 0 ? 2.0 : 6.0) * expected_host_s;
        synchronize();
        at::cuda::CUDAEvent e0(cudaEventDefault), e1(cudaEventDefault);
        at::cuda::sleep(static_cast<int64_t>(sleep_s * rate));
        e0.record();
        const auto t0 = runner_detail::Clock::now();
        micro_batch(ids, a);
        const double host_s = runner_detail::seconds_since(t0);
        e1.record();
        e1.synchronize();
        clear_gradients();
        // A host time close to the sleep means the launch queue filled and the host waited
        // for the GPU: not pure dispatch. Retry once with a longer sleep.
        if (host_s < 0.9 * sleep_s) {
          host.push_back(host_s);
          dev.push_back(e0.elapsed_time(e1) / 1e3);
          measured = true;
        } else {
          expected_host_s = std::max(expected_host_s, host_s);
        }
      }
      if (!measured) return;  // unreliable: leave NaN
    }
    r.host_time_s = runner_detail::median(host);
    r.device_time_s = runner_detail::median(dev);
#else
    (void)spec, (void)b, (void)a, (void)s, (void)repeats, (void)sampler, (void)r;
#endif
  }

  RunResult run(const RunSpec& spec) {
    check_same_model(workload, spec.workload, info);
    spec.workload.validate();
    check_run_counts(spec.micro_batch, spec.accumulation, spec.workload.train.seq_len);
    if (spec.warmup_steps < 0 || spec.measure_steps < 1)
      throw InputError("a run needs warmup_steps >= 0 and measure_steps >= 1");
    if (spec.memory_limit_bytes < 0) throw InputError("memory_limit_bytes must be 0 (none) or positive");

    if (group && group->size() > 1 && spec.workload.train.lengths)
      throw InputError("data-parallel runs of the runner take fixed lengths: drop --lengths with several processes",
                       "processes");
    // Data of many lengths: micro-batches from the sampler, at most its widest; s bounds them.
    std::unique_ptr<LengthSampler> sampler;
    if (spec.workload.train.lengths)
      sampler = std::make_unique<LengthSampler>(*spec.workload.train.lengths, spec.workload.train.padding,
                                                spec.data_seed);
    const int64_t b = spec.micro_batch, a = spec.accumulation;
    const int64_t s = sampler ? sampler->max_width_tokens() : spec.workload.train.seq_len;
    RunResult r;
    r.micro_batch = b;
    r.accumulation = a;
    r.seq_len = s;
    r.num_layers = workload.arch.num_layers;
    r.precision = workload.train.precision;
    r.processes = group ? group->size() : 1;
    if (sampler) r.collation = model::padding_name(spec.workload.train.padding);
    // Refused as an out-of-memory before anything is allocated: past what the machine has, a
    // CPU run is not refused by an allocator but killed by the kernel.
    model::Workload run_w = workload;
    run_w.train.seq_len = s;
    r.error = run_memory_shortfall(run_w, b, a, info, available_host_bytes());
    if (!r.error.empty()) {
      r.oom = true;
      return r;
    }
#ifdef LORASIM_TORCH_CUDA
    std::unique_ptr<c10::cuda::CUDAGuard> guard;
    if (info.is_cuda) guard = std::make_unique<c10::cuda::CUDAGuard>(device.index());
#endif
    std::string oom_message;
    try {
      runner_detail::LimitGuard limit(*memory, spec.memory_limit_bytes);
      // Empty the allocator's cache *before* the warm-up, not after it: the peak then covers
      // this split alone (not what an earlier split left cached), while the timed steps run
      // on a warm allocator, as a real training run does after its first step. Emptying it
      // after the warm-up put the cost of mapping the whole footprint back into the first
      // timed step.
      synchronize();
      memory->release_cache();
      memory->reset_peak();
      // Which timed micro-batches meet a shape this process has not trained a model of this kind
      // on: the warm-up's shapes are met, not counted, as the probe counts them.
      shapes = ShapeTally(shape_kind);
      for (int i = 0; i < spec.warmup_steps; ++i) r.losses.push_back(train_step(spec, b, a, s, sampler.get()).loss);
      std::vector<double> step_s, micro_s, opt_s;
      BatchRecord timed;
      shapes.start_counting();
      for (int i = 0; i < spec.measure_steps; ++i) {
        const StepTiming t = train_step(spec, b, a, s, sampler.get(), &timed);
        step_s.push_back(t.step_s);
        micro_s.insert(micro_s.end(), t.micro_batch_s.begin(), t.micro_batch_s.end());
        opt_s.push_back(t.optimizer_s);
        r.losses.push_back(t.loss);
      }
      shapes.stop_counting();
      r.peak_allocated_bytes = memory->peak_allocated_bytes();
      r.peak_reserved_bytes = memory->peak_reserved_bytes();
      // One shape: the median step is the steady state. Many widths: the mean, which is what a
      // prediction from the widths gives, with what the new shapes among them cost (as the probe).
      const bool varied = sampler && timed.widths.widths().size() > 1;
      r.step_time_s = varied ? runner_detail::mean(step_s) : runner_detail::median(step_s);
      r.micro_batch_time_s = varied ? runner_detail::mean(micro_s) : runner_detail::median(micro_s);
      r.optimizer_time_s = runner_detail::median(opt_s);
      r.new_shapes_per_step = new_shapes_per_step(shapes.new_shapes(), spec.measure_steps, varied);
      if (sampler) {
        r.padded_lengths = timed.widths.widths();
        r.real_tokens = timed.real_tokens / static_cast<double>(model::micro_batch_count(r.padded_lengths));
        r.seq_len = model::largest_width_tokens(r.padded_lengths);
      }
      if (!info.is_cuda)
        r.device_time_s = r.micro_batch_time_s;  // one thread does both: no split to measure
      else if (spec.split_host_device)
        measure_host_device(spec, b, a, s, std::max(5, spec.measure_steps), sampler.get(), r);  // host time is noisy
    } catch (const c10::Error& e) {
      if (!runner_detail::is_out_of_memory(e.what()) && dynamic_cast<const c10::OutOfMemoryError*>(&e) == nullptr)
        throw CalibrationError(std::string("training step failed on ") + info.spec + ": " +
                               e.what_without_backtrace());
      oom_message = e.what_without_backtrace();
    } catch (const std::bad_alloc&) {
      oom_message = "host out of memory (std::bad_alloc)";
    } catch (const RunInterrupted&) {
      release_step();  // the trainer stays usable
      throw;
    }
    if (!oom_message.empty()) {
      release_step();
      r.oom = true;
      r.error = oom_message.substr(0, oom_message.find('\n'));
    }
    return r;
  }
};

}  // namespace lorasim::calib
