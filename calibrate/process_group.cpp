// c10d's process group for the runner's ranks (process_group.h): a FileStore rendezvous, then
// Gloo (CPU tensors) or NCCL (CUDA tensors, where LibTorch has it). Gloo's header needs
// USE_C10D_GLOO and the gloo headers (Debian: libgloo-dev); NCCL's USE_C10D_NCCL, which
// calibrate/CMakeLists.txt defines only for a CUDA LibTorch that ships ProcessGroupNCCL.hpp.
#include "calibrate/process_group.h"

#include <chrono>
#include <filesystem>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef LORASIM_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "calibrate/process_group_torch.h"
#include "model/error.h"

namespace lorasim::calib {

namespace {

std::chrono::milliseconds to_ms(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1e3)); }

// Binds a c10d backend of either LibTorch API (1.x: a ProcessGroup; 2.x: a Backend) to the
// Impl's collectives: both have allreduce(vector<Tensor>&, AllreduceOptions) and barrier().
template <class Backend>
void bind(ProcessGroup::Impl& impl, c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Backend> pg) {
  auto reduce = [pg](std::vector<torch::Tensor>& tensors, c10d::ReduceOp op) {
    c10d::AllreduceOptions o;
    o.reduceOp = op;
    pg->allreduce(tensors, o)->wait();
  };
  impl.allreduce_sum = [reduce](std::vector<torch::Tensor>& t) { reduce(t, c10d::ReduceOp::SUM); };
  impl.allreduce_max = [reduce](std::vector<torch::Tensor>& t) { reduce(t, c10d::ReduceOp::MAX); };
  impl.barrier = [pg] { pg->barrier()->wait(); };
  struct Held {
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<Backend> pg;
  };
  impl.keep = std::make_shared<Held>(Held{std::move(store), std::move(pg)});
}

}  // namespace

bool nccl_compiled() {
#ifdef LORASIM_WITH_NCCL
  return true;
#else
  return false;
#endif
}

ProcessGroup::ProcessGroup(const ProcessGroupSpec& spec) : impl_(std::make_unique<Impl>()) {
  if (spec.world_size < 1) throw InputError("a process group needs a world size of at least 1", "world_size");
  if (spec.rank < 0 || spec.rank >= spec.world_size)
    throw InputError("rank " + std::to_string(spec.rank) + " is outside the world of " +
                         std::to_string(spec.world_size) + " processes (0 .. " + std::to_string(spec.world_size - 1) + ")",
                     "rank");
  if (spec.rendezvous.empty()) throw InputError("a process group needs a rendezvous file every rank names", "rendezvous");
  const std::filesystem::path dir = std::filesystem::path(spec.rendezvous).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir))
    throw InputError("the rendezvous file's folder '" + dir.string() + "' does not exist", "rendezvous");
  if (!(spec.timeout_s > 0)) throw InputError("a process group's timeout must be positive seconds");
  const bool cuda = spec.device.rfind("cuda", 0) == 0;
  impl_->rank = spec.rank;
  impl_->size = spec.world_size;
  try {
    auto store = c10::make_intrusive<c10d::FileStore>(spec.rendezvous, spec.world_size);
    store->setTimeout(to_ms(spec.timeout_s));
    if (cuda) {
#ifdef LORASIM_WITH_NCCL
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = to_ms(spec.timeout_s);
      impl_->backend = "nccl";
      bind(*impl_, store, c10::make_intrusive<c10d::ProcessGroupNCCL>(store, spec.rank, spec.world_size, options));
#else
      throw InputError("this LibTorch has no NCCL backend for CUDA ranks: build against a CUDA LibTorch with "
                       "distributed support (docs/data-parallel.md), or use --device cpu (Gloo)", "device");
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(to_ms(spec.timeout_s));
      // Loopback: the ranks are processes of one host, and a hostname may not resolve.
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      options->threads = 2;
      impl_->backend = "gloo";
      bind(*impl_, store, c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.rank, spec.world_size, options));
    }
  } catch (const c10::Error& e) {
    throw CalibrationError("rank " + std::to_string(spec.rank) + " of " + std::to_string(spec.world_size) +
                           " could not join the process group at '" + spec.rendezvous +
                           "': " + e.what_without_backtrace());
  }
}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }
const std::string& ProcessGroup::backend() const { return impl_->backend; }

void ProcessGroup::barrier() {
  try {
    impl_->barrier();
  } catch (const c10::Error& e) {
    throw CalibrationError("the ranks' barrier failed: " + std::string(e.what_without_backtrace()));
  }
}

void average_gradients(ProcessGroup& group, const std::vector<torch::Tensor>& params) {
  ProcessGroup::Impl& g = group.impl();
  if (g.size == 1 || params.empty()) return;
  const int64_t per_bucket = kGradientBucketBytes / 4;  // fp32 elements
  size_t i = 0;
  while (i < params.size()) {
    // One bucket: the next parameters up to the cap (at least one, however large).
    std::vector<torch::Tensor> grads;
    int64_t elements = 0;
    for (; i < params.size() && (grads.empty() || elements + params[i].numel() <= per_bucket); ++i) {
      torch::Tensor& grad = params[i].mutable_grad();
      if (!grad.defined()) grad = torch::zeros_like(params[i]);
      grads.push_back(grad);
      elements += params[i].numel();
    }
    std::vector<torch::Tensor> rows;
    for (const auto& grad : grads) rows.push_back(grad.reshape({-1}));
    std::vector<torch::Tensor> flat = {torch::cat(rows).to(torch::kFloat32)};
    g.allreduce_sum(flat);
    flat[0].div_(static_cast<double>(g.size));
    int64_t at = 0;
    for (auto& grad : grads) {
      grad.copy_(flat[0].narrow(0, at, grad.numel()).view_as(grad));  // back to the grad's dtype
      at += grad.numel();
    }
  }
}

double average_over_ranks(ProcessGroup& group, double value, const torch::Device& device) {
  ProcessGroup::Impl& g = group.impl();
  if (g.size == 1) return value;
  std::vector<torch::Tensor> t = {torch::full({1}, value, torch::TensorOptions().device(device).dtype(torch::kFloat64))};
  g.allreduce_sum(t);
  return t[0].item<double>() / g.size;
}

}  // namespace lorasim::calib
