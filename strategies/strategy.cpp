#include <fulgur/strategies/strategy.hpp>

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/strategies/cuda/cuda_runtime.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cstring>
#include <string>
#include <vector>

namespace fulgur {

Strategy::Strategy(Accelerator accelerator, PrecisionMode precision, torch::Device root_device)
    : accelerator_(accelerator),
      root_device_(root_device),
      precision_(precision, root_device),
      single_mesh_(std::make_unique<DeviceMesh>()) {}

Strategy::~Strategy() = default;

DeviceMesh& Strategy::device_mesh() { return *single_mesh_; }

void Strategy::configure_model(LightningModule& module) {
  if (configured(module)) return;
  module.configure_model(device_mesh());
  configured_ = &module;
}

void Strategy::setup_environment() { accelerator_.setup_device(root_device_); }

void Strategy::setup(LightningModule& module) { module.to(root_device_); }

void Strategy::backward(const torch::Tensor& loss) { precision_.backward(loss); }

void Strategy::prepare_optimizer_step(torch::optim::Optimizer& optimizer) {
  // Gradients must be averaged and in true units before anyone reads or clips them.
  synchronize_gradients();
  precision_.unscale_gradients(optimizer);
}

bool Strategy::finish_optimizer_step(torch::optim::Optimizer& optimizer, std::optional<Clip> clip) {
  if (clip) clip_unscaled_gradients(optimizer, clip->value, clip->algorithm);
  return step(optimizer);
}

void Strategy::clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  precision_.unscale_gradients(optimizer);
  clip_unscaled_gradients(optimizer, value, algorithm);
}

bool Strategy::step(torch::optim::Optimizer& optimizer) { return precision_.optimizer_step(optimizer); }

void Strategy::clip_unscaled_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  clip_optimizer_gradients(optimizer, value, algorithm);
}

Batch Strategy::batch_to_device(const Batch& batch) const {
  if (batch.input.device() == root_device_) {
    // Made on the device by a loader thread on its own stream (GPU
    // decoding): the caching allocator must not hand its memory to that
    // stream again before this stream's step is done with it.
    if (root_device_.is_cuda()) {
      const auto* guard = c10::impl::getDeviceGuardImpl(root_device_.type());
      const c10::Stream stream = guard->getStream(root_device_);
      batch.map([&](const torch::Tensor& t) {
        if (t.is_cuda()) guard->recordDataPtrOnStream(t.storage().data_ptr(), stream);
        return t;
      });
    }
    return batch;
  }
  return batch.to(root_device_, accelerator_.supports_non_blocking_copy() && batch.input.is_pinned());
}

std::string Strategy::broadcast_bytes(const std::string& bytes, int64_t source_rank) {
  if (world_size() == 1) return bytes;
  const bool source = global_rank() == source_rank;
  const torch::Tensor length = torch::tensor({static_cast<int64_t>(source ? bytes.size() : 0)}, torch::kInt64);
  const int64_t size = broadcast(length.to(root_device()), source_rank).cpu().item<int64_t>();
  torch::Tensor data = torch::empty({size}, torch::kUInt8);
  if (source) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  data = broadcast(data.to(root_device()), source_rank).cpu();
  return {static_cast<const char*>(data.data_ptr()), static_cast<size_t>(size)};
}

int64_t Strategy::max_over_ranks(int64_t value) {
  if (world_size() == 1) return value;
  const torch::Tensor local = torch::tensor({value}, torch::kInt64).to(root_device());
  return all_reduce(local, ReduceOp::Max).cpu().item<int64_t>();
}

std::vector<std::string> Strategy::all_gather_bytes(const std::string& bytes) {
  if (world_size() == 1) return {bytes};
  const torch::Tensor length = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64);
  const torch::Tensor lengths = all_gather(length.to(root_device())).cpu().reshape({-1});
  const int64_t longest = std::max<int64_t>(1, lengths.max().item<int64_t>());
  torch::Tensor data = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  const torch::Tensor every = all_gather(data.to(root_device())).cpu().contiguous();
  std::vector<std::string> out;
  for (int64_t rank = 0; rank < every.size(0); ++rank) {
    out.emplace_back(static_cast<const char*>(every[rank].data_ptr()), static_cast<size_t>(lengths[rank].item<int64_t>()));
  }
  return out;
}

namespace {

// The batch's defined tensors, in Batch::map's order.
std::vector<torch::Tensor> tensors_of(const Batch& batch) {
  std::vector<torch::Tensor> tensors;
  batch.map([&](const torch::Tensor& t) {
    tensors.push_back(t);
    return t;
  });
  return tensors;
}

}  // namespace

DeviceBatch Strategy::start_batch_to_device(const Batch& batch) const {
  if (root_device_.is_cuda() && batch.input.defined() && batch.input.is_pinned()) {
    // The side-stream copy lives in the fulgur_cuda module (cuda_copy_module.cpp).
    using Copy = void (*)(const std::vector<torch::Tensor>&, int64_t, std::vector<torch::Tensor>&,
                          std::shared_ptr<void>&);
    static const auto copy = reinterpret_cast<Copy>(CudaRuntime::symbol("fulgur_cuda_copy_async"));
    if (copy != nullptr) {
      std::vector<torch::Tensor> device_tensors;
      DeviceBatch out;
      copy(tensors_of(batch), root_device_.index(), device_tensors, out.ready);
      size_t next = 0;
      out.batch = batch.map([&](const torch::Tensor&) { return device_tensors[next++]; });
      return out;
    }
  }
  return {batch_to_device(batch), nullptr};
}

Batch Strategy::finish_batch_to_device(DeviceBatch batch) const {
  if (batch.ready) {
    using Wait = void (*)(const std::vector<torch::Tensor>&, const std::shared_ptr<void>&);
    static const auto wait = reinterpret_cast<Wait>(CudaRuntime::symbol("fulgur_cuda_wait_copy"));
    wait(tensors_of(batch.batch), batch.ready);
  }
  return std::move(batch.batch);
}

}  // namespace fulgur
