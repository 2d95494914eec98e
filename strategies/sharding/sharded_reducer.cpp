#include <fulgur/strategies/sharding/sharded_reducer.hpp>

#include <fulgur/strategies/collectives/process_group.hpp>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <stdexcept>

namespace fulgur {

ShardedReducer::ShardedReducer(const ShardLayout& layout, UnitResidency& residency, ProcessGroup& group,
                               Options options)
    : layout_(layout),
      residency_(residency),
      group_(group),
      options_(std::move(options)),
      grad_shards_(layout_.params().size()),
      units_(layout_.units().size()) {
  std::vector<torch::Tensor> tensors;
  for (const auto& p : layout_.params()) tensors.push_back(p.tensor);
  hooks_.emplace(tensors, [this](size_t k) { on_gradient_ready(k); }, "ddp.find_unused_parameters", options_.hooks);
}

ShardedReducer::~ShardedReducer() = default;

void ShardedReducer::allocate_gradient(size_t index) {
  Unit& unit = units_[index];
  if (unit.grad.defined()) return;
  const ShardLayout::Unit& shape = layout_.units()[index];
  unit.grad = torch::zeros({shape.chunk_numel}, shape.options);
  for (size_t k : shape.params) {
    const ShardLayout::Param& p = layout_.params()[k];
    const torch::Tensor& shard = residency_.shard(k);
    torch::Tensor view = unit.grad.narrow(0, p.offset, p.local_rows * p.row_numel);
    grad_shards_[k] = shard.dim() == 0 ? view.view({}) : view.view(shard.sizes());
  }
}

void ShardedReducer::prepare(bool sync) {
  for (size_t u = 0; u < units_.size(); ++u) {
    if (residency_.sharded(u) && !residency_.forward_gathered(u)) {
      throw std::logic_error("[ShardedReducer::prepare] backward while parameters are sharded (no optimizer step "
                             "after the last gradient synchronisation)");
    }
  }
  syncing_ = sync;
  in_backward_ = true;
  launched_in_backward_ = 0;
  next_to_launch_ = 0;
  reducing_.clear();
  hooks_->reset();
  for (size_t u = 0; u < units_.size(); ++u) {
    units_[u].pending = static_cast<int64_t>(layout_.units()[u].params.size());
    units_[u].work.reset();
  }
}

void ShardedReducer::on_gradient_ready(size_t k) {
  if (!syncing_ || !hooks_->mark_ready(k)) return;
  if (--units_[layout_.params()[k].unit].pending == 0) launch_ready_units();
}

void ShardedReducer::launch_ready_units() {
  // Strictly in unit order on every rank, so the collectives pair up.
  while (next_to_launch_ < units_.size() && units_[next_to_launch_].pending == 0) {
    settle_reductions(kReductionsInFlight - 1);
    launch_reduce_scatter(next_to_launch_);
    reducing_.push_back(next_to_launch_);
    peak_reductions_ = std::max<int64_t>(peak_reductions_, static_cast<int64_t>(reducing_.size()));
    if (in_backward_) {
      ++launched_in_backward_;
      // FULL_SHARD: the unit's backward is over; its whole parameters go now.
      residency_.free_unit(next_to_launch_);
    }
    ++next_to_launch_;
  }
}

void ShardedReducer::launch_reduce_scatter(size_t index) {
  torch::NoGradGuard no_grad;
  residency_.drop_prefetch(index);  // prefetched but not used
  allocate_gradient(index);
  Unit& unit = units_[index];
  const ShardLayout::Unit& shape = layout_.units()[index];
  const int64_t world = layout_.world();
  // A mean, divided before the sum as DDP does (over the replicas' sum too),
  // in the same pass that lays the gradients out.
  const int64_t replicas = options_.replicas ? options_.replicas->size() : 1;
  const double scale = 1.0 / static_cast<double>(world * replicas);
  // Rank-major: chunk r holds rows [r*c, (r+1)*c) of every parameter, padded.
  unit.input = buffers_.take(world * shape.chunk_numel, shape.options);
  for (size_t k : shape.params) {
    const ShardLayout::Param& p = layout_.params()[k];
    const torch::Tensor grad = p.tensor.grad();
    const torch::Tensor flat = grad.defined() ? grad.reshape({-1}) : torch::Tensor();
    for (int64_t r = 0; r < world; ++r) {
      ShardLayout::fill_padded(
          unit.input.narrow(0, r * shape.chunk_numel + p.offset, p.chunk_rows * p.row_numel),
          flat.defined() ? flat.narrow(0, p.first_row(r) * p.row_numel, p.rows_of(r) * p.row_numel) : torch::Tensor(),
          scale);
    }
    // The whole gradient is not needed any more: only the shard stays.
    p.tensor.mutable_grad() = torch::Tensor();
  }
  unit.work = group_.reduce_scatter_async(unit.grad, unit.input);
}

void ShardedReducer::become_shards(size_t index) {
  residency_.become_shards(index);
  for (size_t k : layout_.units()[index].params) layout_.params()[k].tensor.mutable_grad() = grad_shards_[k];
}

void ShardedReducer::finish() {
  in_backward_ = false;
  if (!syncing_) return;
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].pending == 0) continue;
    for (size_t k : layout_.units()[u].params) {
      if (hooks_->is_ready(k)) continue;
      // Unused (zero) or accumulated without a hook call.
      const ShardLayout::Param& p = layout_.params()[k];
      hooks_->mark_missing(k, options_.find_unused_parameters || p.tensor.grad().defined(), "ShardedReducer::finish",
                           p.name, group_.rank());
    }
    units_[u].pending = 0;
  }
  launch_ready_units();
  settle_reductions(0);
  for (auto& unit : units_) {
    if (!unit.replica_work) continue;
    options_.replicas->wait(unit.replica_work, "all_reduce");
    unit.replica_work.reset();
  }
  for (size_t u = 0; u < units_.size(); ++u) {
    residency_.drop_prefetch(u);  // of rows the step is about to change
    become_shards(u);
  }
  syncing_ = false;
}

void ShardedReducer::settle_reductions(size_t in_flight) {
  while (!reducing_.empty()) {
    Unit& unit = units_[reducing_.front()];
    if (reducing_.size() <= in_flight && !unit.work->isCompleted()) return;
    group_.wait(unit.work, "reduce_scatter");
    unit.work.reset();
    buffers_.give(unit.input);  // a whole unit's gradients, kept for the next unit of this size
    if (options_.replicas) unit.replica_work = options_.replicas->all_reduce_async(unit.grad, ReduceOp::Sum);
    reducing_.pop_front();
  }
}

void ShardedReducer::shard_from_whole(const std::unordered_set<const void*>& params) {
  torch::NoGradGuard no_grad;
  for (size_t u = 0; u < units_.size(); ++u) {
    if (residency_.sharded(u)) continue;
    bool touched = false;
    for (size_t k : layout_.units()[u].params) {
      touched = touched || params.count(layout_.params()[k].tensor.unsafeGetTensorImpl()) > 0;
    }
    if (!touched) continue;
    allocate_gradient(u);
    for (size_t k : layout_.units()[u].params) {
      const ShardLayout::Param& p = layout_.params()[k];
      const torch::Tensor grad = p.tensor.grad();
      if (grad.defined()) {
        grad_shards_[k].copy_(layout_.shard_of(p.tensor, grad));
      } else {
        grad_shards_[k].zero_();
      }
    }
    become_shards(u);
  }
}

void ShardedReducer::gather() { residency_.gather(/*unshard_now=*/!options_.hooks && options_.unshard_after_step); }

std::vector<torch::Tensor> ShardedReducer::held_tensors() const {
  std::vector<torch::Tensor> out;
  for (const auto& unit : units_) {
    if (unit.grad.defined()) out.push_back(unit.grad);
  }
  return out;
}

}  // namespace fulgur
