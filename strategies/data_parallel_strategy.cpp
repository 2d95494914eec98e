#include <fulgur/strategies/data_parallel_strategy.hpp>

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/strategies/model_parallel/parallelize_module.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace fulgur {
namespace {

// Dimensions compared by check_same_shape (more are rare in a collective).
constexpr int64_t kMaxDims = 8;

// Shapes of all parameters as one int64 tensor: [count, ndim0, dims0..., ndim1, ...].
torch::Tensor shape_signature(const std::vector<torch::Tensor>& params) {
  std::vector<int64_t> sig{static_cast<int64_t>(params.size())};
  for (const auto& p : params) {
    sig.push_back(p.dim());
    for (int64_t d : p.sizes()) sig.push_back(d);
  }
  return torch::tensor(sig, torch::kInt64);
}

std::string describe_shape(const std::vector<int64_t>& sig, size_t& pos) {
  const int64_t ndim = sig[pos++];
  std::vector<int64_t> dims(sig.begin() + static_cast<std::ptrdiff_t>(pos),
                            sig.begin() + static_cast<std::ptrdiff_t>(pos + ndim));
  pos += static_cast<size_t>(ndim);
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

}  // namespace

DataParallelStrategy::DataParallelStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions options,
                                           DDPOptions ddp)
    : Strategy(accelerator, precision, accelerator.device(options.local_rank)),
      options_(std::move(options)),
      ddp_(std::move(ddp)) {
  options_.process_group.device_type = root_device().type();
  const char* debug = std::getenv("TORCH_DISTRIBUTED_DEBUG");
  check_shapes_ = debug != nullptr && std::string(debug) == "DETAIL";
}

DataParallelStrategy::~DataParallelStrategy() = default;

ProcessGroup& DataParallelStrategy::process_group() {
  if (!group_) throw std::logic_error("[DataParallelStrategy::process_group] used before setup_environment");
  return *group_;
}

void DataParallelStrategy::abort_collectives() {
  if (group_) group_->abort();
}

void DataParallelStrategy::setup_environment() {
  Strategy::setup_environment();
  // One group for the strategy's lifetime: fit then test reuse it.
  if (!group_) group_ = std::make_unique<ProcessGroup>(options_.process_group, waits_);
  if (options_.mesh && !mesh_) mesh_ = std::make_unique<DeviceMesh>(*group_, *options_.mesh);
  if (!timeline_ && !options_.timeline_path.empty()) {
    timeline_ = std::make_unique<Timeline>(Timeline::path_for_rank(options_.timeline_path, global_rank()),
                                           global_rank());
  }
}

void DataParallelStrategy::check_same_shapes(LightningModule& module, ProcessGroup& group) {
  const auto named = module.named_parameters();
  std::vector<torch::Tensor> params;
  for (const auto& item : named) params.push_back(item.value());
  torch::Tensor mine = shape_signature(params).to(root_device());

  // Signatures may differ in length: gather lengths, then padded signatures.
  torch::Tensor length = torch::tensor({mine.numel()}, torch::kInt64).to(root_device());
  int64_t longest = 0;
  for (const auto& l : group.all_gather(length)) longest = std::max(longest, l.item<int64_t>());
  torch::Tensor padded = torch::full({longest}, -1, mine.options());
  padded.narrow(0, 0, mine.numel()).copy_(mine);
  const auto all = group.all_gather(padded);

  auto to_vector = [](const torch::Tensor& t) {
    const torch::Tensor c = t.cpu().contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  };
  const std::vector<int64_t> reference = to_vector(all[0]);
  for (int64_t r = 1; r < group.size(); ++r) {
    const std::vector<int64_t> other = to_vector(all[static_cast<size_t>(r)]);
    if (other[0] != reference[0]) {
      throw std::runtime_error(fmt::format("[DataParallelStrategy::setup] rank {} has {} parameters but rank 0 has {}", r,
                                           other[0], reference[0]));
    }
    size_t pa = 1, pb = 1;
    for (int64_t i = 0; i < reference[0]; ++i) {
      const std::string a = describe_shape(reference, pa);
      const std::string b = describe_shape(other, pb);
      if (a != b) {
        throw std::runtime_error(fmt::format("[DataParallelStrategy::setup] parameter '{}' has shape {} on rank {} but {} on rank 0",
                                             named[static_cast<size_t>(i)].key(), b, r, a));
      }
    }
  }
}

void DataParallelStrategy::setup_replicas(LightningModule& module) {
  Strategy::setup(module);
  automatic_ = module.automatic_optimization();
  ProcessGroup* same = mesh_ ? replicas() : &process_group();
  if (same != nullptr) check_same_shapes(module, *same);
  torch::NoGradGuard no_grad;
  if (ProcessGroup* group = replicas()) {
    for (auto& p : module.parameters()) group->broadcast(p, 0);
    for (auto& b : module.buffers()) group->broadcast(b, 0);
  }
  buffers_.clear();
  buffer_offsets_.clear();
  int64_t bytes = 0;
  for (auto& b : module.buffers()) {
    if (!b.is_contiguous()) {
      throw std::runtime_error(fmt::format("[DataParallelStrategy::setup] buffer {} is not contiguous", buffers_.size()));
    }
    buffers_.push_back(b);
    buffer_offsets_.push_back(bytes);
    bytes += (b.nbytes() + 7) / 8 * 8;  // each starts aligned, so its bytes view back as its dtype
  }
  flat_buffers_ = bytes > 0 ? torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(root_device()))
                            : torch::Tensor();
}

void DataParallelStrategy::setup(LightningModule& module) {
  setup_replicas(module);
  // A pipeline's step averages its gradients once its schedule is done.
  if (!automatic_ || replicas() == nullptr || pipeline_) return;
  auto [params, names] = named_parameters_of(module);
  synchronizer_ = make_synchronizer(std::move(params), std::move(names));
}

std::pair<std::vector<torch::Tensor>, std::vector<std::string>> DataParallelStrategy::named_parameters_of(
    LightningModule& module) {
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters()) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  return {std::move(params), std::move(names)};
}

void DataParallelStrategy::set_synchronizer(std::unique_ptr<GradientSynchronizer> synchronizer) {
  synchronizer_ = std::move(synchronizer);
}

void DataParallelStrategy::teardown() {
  synchronizer_.reset();
  buffers_.clear();
  buffer_offsets_.clear();
  flat_buffers_ = torch::Tensor();
}

void DataParallelStrategy::check_same_shape(const torch::Tensor& tensor, const char* operation) {
  // Collectives over tensors of different shapes hang or fail obscurely in
  // the backend; exchanging the (small) shapes first gives a clear error.
  torch::Tensor mine = torch::full({kMaxDims + 1}, -1, torch::kInt64);
  mine[0] = tensor.dim();
  for (int64_t d = 0; d < std::min<int64_t>(tensor.dim(), kMaxDims); ++d) mine[d + 1] = tensor.size(d);
  const auto all = process_group().all_gather(mine.to(root_device()));
  auto shape_text = [](const torch::Tensor& sig) {
    const torch::Tensor c = sig.cpu();
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < std::min<int64_t>(c[0].item<int64_t>(), kMaxDims); ++d) dims.push_back(c[d + 1].item<int64_t>());
    return fmt::format("[{}]", fmt::join(dims, ", "));
  };
  const std::string reference = shape_text(all[0]);
  for (int64_t r = 1; r < world_size(); ++r) {
    const std::string other = shape_text(all[static_cast<size_t>(r)]);
    if (other != reference) {
      throw std::runtime_error(fmt::format("[DataParallelStrategy::{}] rank {} passed a tensor of shape {} but rank 0 of shape {}",
                                           operation, r, other, reference));
    }
  }
}

torch::Tensor DataParallelStrategy::all_reduce(const torch::Tensor& tensor, ReduceOp op) {
  // Comparing shapes costs a collective; as in PyTorch, only when debugging.
  if (check_shapes_) check_same_shape(tensor, "all_reduce");
  torch::Tensor result = tensor.detach().to(root_device()).clone();
  try {
    process_group().all_reduce(result, op);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{} (if the ranks passed tensors of different shapes, "
                                         "TORCH_DISTRIBUTED_DEBUG=DETAIL compares them at every all_reduce)",
                                         e.what()));
  }
  return result;
}

torch::Tensor DataParallelStrategy::broadcast(const torch::Tensor& tensor, int64_t source_rank) {
  torch::Tensor result = tensor.detach().to(root_device()).clone();
  process_group().broadcast(result, source_rank);
  return result;
}

torch::Tensor DataParallelStrategy::all_gather(const torch::Tensor& tensor) {
  if (check_shapes_) check_same_shape(tensor, "all_gather");
  return torch::stack(process_group().all_gather(tensor.detach().to(root_device()).contiguous()));
}

void DataParallelStrategy::average_gradients(const std::vector<torch::Tensor>& parameters) {
  ProcessGroup* replica_group = replicas();
  if (replica_group == nullptr || replica_group->size() == 1) return;
  torch::NoGradGuard no_grad;
  // One flat buffer per dtype: one collective instead of one per parameter.
  std::map<c10::ScalarType, std::vector<torch::Tensor>> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads[p.grad().scalar_type()].push_back(p.grad());
  }
  for (auto& [dtype, group] : grads) {
    std::vector<torch::Tensor> flat;
    for (const auto& g : group) flat.push_back(g.reshape({-1}));
    torch::Tensor buffer = torch::cat(flat);
    replica_group->all_reduce(buffer, ReduceOp::Sum);
    buffer.div_(static_cast<double>(replica_group->size()));
    int64_t offset = 0;
    for (auto& g : group) {
      g.copy_(buffer.narrow(0, offset, g.numel()).view(g.sizes()));
      offset += g.numel();
    }
  }
}

void DataParallelStrategy::barrier(const std::string&) { process_group().barrier(); }

void DataParallelStrategy::before_training_step() {
  ProcessGroup* group = replicas();
  if (!ddp_.broadcast_buffers() || !flat_buffers_.defined() || group == nullptr) return;
  torch::NoGradGuard no_grad;
  // One broadcast of every buffer's bytes, whatever their dtypes.
  const bool source = group->rank() == 0;
  if (source) {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      flat_buffers_.narrow(0, buffer_offsets_[i], buffers_[i].nbytes()).copy_(buffers_[i].reshape({-1}).view(torch::kUInt8));
    }
  }
  group->broadcast(flat_buffers_, 0);
  if (source) return;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    torch::Tensor& b = buffers_[i];
    b.copy_(flat_buffers_.narrow(0, buffer_offsets_[i], b.nbytes()).view(b.scalar_type()).view(b.sizes()));
  }
}

void DataParallelStrategy::backward(const torch::Tensor& loss) {
  if (synchronizer_ && automatic_) synchronizer_->prepare(sync_gradients());
  Strategy::backward(loss);
}

void DataParallelStrategy::synchronize_gradients() {
  if (synchronizer_ && automatic_) synchronizer_->finish();
}

ProcessGroup* DataParallelStrategy::replicas() {
  if (!mesh_) return &process_group();
  return mesh_->spans("dp") || mesh_->spans("cp") ? &mesh_->group("dp,cp") : nullptr;
}

DeviceMesh& DataParallelStrategy::device_mesh() { return mesh_ ? *mesh_ : Strategy::device_mesh(); }

int64_t DataParallelStrategy::data_parallel_size() const { return mesh_ ? mesh_->size("dp") : world_size(); }

int64_t DataParallelStrategy::data_parallel_rank() const { return mesh_ ? mesh_->rank("dp") : global_rank(); }

torch::Tensor DataParallelStrategy::all_reduce_data_parallel(const torch::Tensor& tensor, ReduceOp op) {
  if (!mesh_) return all_reduce(tensor, op);
  torch::Tensor result = tensor.detach().to(root_device()).clone();
  if (mesh_->spans("dp")) mesh_->group("dp").all_reduce(result, op);
  return result;
}

torch::Tensor DataParallelStrategy::all_gather_data_parallel(const torch::Tensor& tensor) {
  if (!mesh_) return all_gather(tensor);
  const torch::Tensor local = tensor.detach().to(root_device()).contiguous();
  if (!mesh_->spans("dp")) return local.unsqueeze(0).clone();
  return torch::stack(mesh_->group("dp").all_gather(local));
}

void DataParallelStrategy::make_pipeline(LightningModule& module) {
  auto* layered = dynamic_cast<PipelineModule*>(&module);
  const int64_t pp = mesh_->size("pp");
  if (layered == nullptr) {
    throw std::invalid_argument(fmt::format(
        "[model_parallel] pipeline_parallel_size {} splits a fulgur::PipelineModule into stages; this module is not one "
        "(docs/model-parallel.md, \"Pipeline parallelism\")",
        pp));
  }
  if (!module.automatic_optimization()) {
    throw std::invalid_argument("[model_parallel] a pipeline runs the backward passes itself: automatic optimization only");
  }
  if (precision().mode() == PrecisionMode::FP16Mixed) {
    throw std::invalid_argument(
        "[model_parallel] a pipeline does not scale its losses: use precision bf16-mixed or 32, not 16-mixed");
  }
  pipeline_ = std::make_unique<PipelineRunner>(
      *layered, mesh_->group("pp"),
      PipelineSchedule(options_.pipeline_schedule, pp, options_.microbatches, options_.virtual_stages), timeline_.get());
  layered->attach_pipeline(pipeline_.get());
}

void DataParallelStrategy::configure_model(LightningModule& module) {
  if (configured(module)) return;
  if (mesh_) {
    // The parts each rank keeps are cut from rank 0's whole model.
    torch::NoGradGuard no_grad;
    for (auto& p : module.parameters()) process_group().broadcast(p, 0);
    for (auto& b : module.buffers()) process_group().broadcast(b, 0);
  }
  if (mesh_ && mesh_->spans("pp")) make_pipeline(module);
  Strategy::configure_model(module);
  split_dims_.clear();
  if (!mesh_ || !mesh_->spans("tp")) return;
  const int64_t tp = mesh_->size("tp");
  for (const auto& [impl, dim] : split_parameter_dims(module)) {
    for (const auto& p : module.parameters()) {
      if (p.unsafeGetTensorImpl() == impl) split_dims_[impl] = Split{dim, p.size(dim) * tp};
    }
  }
}

torch::Tensor DataParallelStrategy::whole_tensor(const torch::Tensor& param, const torch::Tensor& tensor) {
  const auto found = split_dims_.find(param.unsafeGetTensorImpl());
  if (found == split_dims_.end() || tensor.dim() <= found->second.dim) return tensor;  // whole, or a scalar (a step)
  return torch::cat(mesh_->group("tp").all_gather(tensor.contiguous()), found->second.dim);
}

torch::Tensor DataParallelStrategy::local_tensor(const torch::Tensor& param, const torch::Tensor& whole) const {
  const auto found = split_dims_.find(param.unsafeGetTensorImpl());
  if (found == split_dims_.end()) return whole;
  const auto [dim, size] = found->second;
  // Anything but the whole of a split tensor (a step, this rank's part) is kept as it is.
  if (whole.dim() <= dim || whole.size(dim) != size) return whole;
  const int64_t part = size / mesh_->size("tp");
  return whole.narrow(dim, mesh_->rank("tp") * part, part).contiguous();
}

int64_t DataParallelStrategy::split_dim(const torch::Tensor& param) const {
  const auto found = split_dims_.find(param.unsafeGetTensorImpl());
  return found == split_dims_.end() ? -1 : found->second.dim;
}

int64_t DataParallelStrategy::split_factor(const torch::Tensor& param) const {
  return split_dims_.count(param.unsafeGetTensorImpl()) != 0 ? mesh_->size("tp") : 1;
}

int64_t DataParallelStrategy::whole_numel(const torch::Tensor& param) const { return param.numel() * split_factor(param); }

void DataParallelStrategy::clip_unscaled_gradients(torch::optim::Optimizer& optimizer, double value,
                                                   ClipAlgorithm algorithm) {
  if (!mesh_ || (!mesh_->spans("tp") && !mesh_->spans("pp")) || algorithm == ClipAlgorithm::Value) {
    Strategy::clip_unscaled_gradients(optimizer, value, algorithm);
    return;
  }
  clip_to_global_norm(optimizer, value, [](const torch::Tensor&) { return true; }, nullptr);
}

void DataParallelStrategy::clip_to_global_norm(torch::optim::Optimizer& optimizer, double value,
                                               const std::function<bool(const torch::Tensor&)>& counts,
                                               ProcessGroup* shards) {
  torch::NoGradGuard no_grad;
  // Under tp a split parameter's squares count on every rank, a whole one's
  // on tp rank 0 only; then the sums over the shards, over tp and over the
  // pipeline's stages.
  std::vector<torch::Tensor> grads;
  torch::Tensor squares = torch::zeros({1}, torch::TensorOptions().dtype(torch::kDouble).device(root_device()));
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      grads.push_back(p.grad());
      const bool whole_elsewhere = mesh_ && mesh_->rank("tp") != 0 && split_dims_.count(p.unsafeGetTensorImpl()) == 0;
      if (counts(p) && !whole_elsewhere) squares += p.grad().to(torch::kDouble).pow(2).sum();
    }
  }
  if (shards != nullptr) shards->all_reduce(squares, ReduceOp::Sum);
  if (mesh_ && mesh_->spans("tp")) mesh_->group("tp").all_reduce(squares, ReduceOp::Sum);
  if (mesh_ && mesh_->spans("pp")) mesh_->group("pp").all_reduce(squares, ReduceOp::Sum);  // every stage's
  // As torch::nn::utils::clip_grad_norm_: scale by max_norm / (norm + 1e-6) when below 1.
  const double coefficient = value / (std::sqrt(squares.item<double>()) + 1e-6);
  if (coefficient >= 1.0) return;
  for (auto& g : grads) g.mul_(coefficient);
}

}  // namespace fulgur
