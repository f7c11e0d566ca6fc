// The Trainer: HF-style training steps on the calibration model, with the timing and memory
// measurements calibration fits the cost model to (its state and step: calibrate/trainer_impl.h).
#include "calibrate/runner.h"

#include "calibrate/trainer_impl.h"

namespace lorasim::calib {

Trainer::Trainer(const model::Workload& w, const std::string& device_spec, uint64_t seed) {
  w.validate();
  if (const std::string why = model::runner_refusal(w.arch); !why.empty()) throw InputError(why, "stack");
  DeviceInfo device = resolve_device(device_spec);
  model::Workload run = w;
  run.train.precision = resolve_precision(w.train.precision, device).precision;
  if (const std::string why = model_memory_shortfall(run, device, available_host_bytes()); !why.empty())
    throw InputError(why);
  try {
    impl_ = std::make_unique<Impl>(run, std::move(device), seed);
  } catch (const c10::Error& e) {
    throw CalibrationError("cannot build the calibration model of '" + w.arch.name + "' on " +
                           device_spec + ": " + e.what_without_backtrace());
  }
}

Trainer::~Trainer() = default;

RunResult Trainer::run(const RunSpec& spec) { return impl_->run(spec); }

const DeviceInfo& Trainer::device() const { return impl_->info; }

const model::Workload& Trainer::workload() const { return impl_->workload; }

void Trainer::join(ProcessGroup& group) {
  if (impl_->workload.train.lengths && group.size() > 1)
    throw InputError("data-parallel runs of the runner take fixed lengths: drop --lengths with several processes",
                     "processes");
  impl_->group = &group;
}

void Trainer::set_data(Data data) { impl_->data = data; }

void Trainer::set_learning_rate(double lr) {
  for (auto& group : impl_->optimizer->param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

void Trainer::randomize_adapters(uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (const auto& item : impl_->model->named_parameters()) {
    const std::string& name = item.key();
    if (name.size() >= 6 && name.compare(name.size() - 6, 6, "lora_b") == 0)
      item.value().normal_(0.0, 0.02);
  }
}

std::vector<float> Trainer::accumulated_gradients(int64_t micro_batch, int64_t accumulation,
                                                  int64_t seq_len, uint64_t data_seed) {
  check_run_counts(micro_batch, accumulation, seq_len);
  Impl& m = *impl_;
  m.clear_gradients();
  std::mt19937_64 rng(data_seed);
  // Joined to N ranks: this rank's rows of every micro-batch of b x N, gradients averaged after.
  const int64_t ranks = m.group ? m.group->size() : 1, rank = m.group ? m.group->rank() : 0;
  const auto all = random_token_ids(micro_batch * ranks * accumulation, seq_len, m.workload.arch.vocab_size,
                                    m.data == Data::learnable, rng, m.device);  // (b * N * a, s)
  for (int64_t i = 0; i < accumulation; ++i) {
    const auto ids = all.narrow(0, (i * ranks + rank) * micro_batch, micro_batch);
    m.micro_batch({ids, ids}, accumulation);
  }
  if (m.group) average_gradients(*m.group, m.adapters);
  std::vector<float> out;
  for (const auto& p : m.adapters) {
    const auto g = (p.grad().defined() ? p.grad() : torch::zeros_like(p))
                       .detach().to(torch::kCPU, torch::kFloat32).contiguous().view({-1});
    out.insert(out.end(), g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  m.clear_gradients();
  return out;
}

std::vector<float> Trainer::adapter_weights() const {
  std::vector<float> out;
  for (const auto& p : impl_->adapters) {
    const auto w = p.detach().to(torch::kCPU, torch::kFloat32).contiguous().view({-1});
    out.insert(out.end(), w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
  }
  return out;
}

void Trainer::snapshot_base_weights() {
  impl_->base_copy.clear();
  for (const auto& p : impl_->model->base_parameters()) impl_->base_copy.push_back(p.detach().clone());
}

bool Trainer::base_weights_unchanged() const {
  const auto now = impl_->model->base_parameters();
  if (now.size() != impl_->base_copy.size()) return false;
  for (size_t i = 0; i < now.size(); ++i)
    if (!torch::equal(now[i], impl_->base_copy[i])) return false;
  return true;
}

}  // namespace lorasim::calib
