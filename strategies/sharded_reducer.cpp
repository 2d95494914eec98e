#include <fulgur/strategies/sharded_reducer.hpp>

#include <fulgur/strategies/process_group.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace fulgur {
namespace {

/// Calls back into the reducer once a parameter's .grad holds this step's sum.

/// Frees (0) or re-allocates a tensor's memory while keeping its storage
/// object, the way FSDP frees a flat parameter: views of it (autograd saved
/// some in the forward) see whatever is written into it after re-allocation.
void resize_storage(const torch::Tensor& t, size_t bytes) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  if (storage->nbytes() == bytes) return;
  if (bytes == 0) {
    storage->set_data_ptr_noswap(at::DataPtr(nullptr, storage->device()));
  } else {
    storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  }
  storage->set_nbytes(bytes);
}

std::string module_of(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

/// A parameter's place in one rank's chunk: `values` (flat, maybe none),
/// times `scale`, at the start; zeros for the padding after them.
void fill_padded(torch::Tensor region, const torch::Tensor& values, double scale = 1.0) {
  const int64_t n = values.defined() ? values.numel() : 0;
  if (n > 0) {
    torch::Tensor head = region.narrow(0, 0, n);
    if (scale == 1.0) {
      head.copy_(values);
    } else {
      at::mul_out(head, values, scale);
    }
  }
  if (n < region.numel()) region.narrow(0, n, region.numel() - n).zero_();
}

}  // namespace

ShardedReducer::ShardedReducer(std::vector<torch::Tensor> parameters, std::vector<std::string> names,
                               ProcessGroup& group, Options options)
    : group_(group), options_(std::move(options)) {
  const int64_t world = group_.size();
  const int64_t rank = group_.rank();
  for (size_t k = 0; k < parameters.size(); ++k) {
    torch::Tensor& p = parameters[k];
    if (!p.requires_grad()) continue;  // nothing to reduce; it stays whole
    if (!p.is_contiguous()) {
      throw std::runtime_error(fmt::format("[ShardedReducer] parameter '{}' is not contiguous", names[k]));
    }
    Param info;
    info.tensor = p;
    info.whole = p.detach();  // shares the parameter's storage: no copy
    info.shape = p.sizes().vec();
    info.name = names[k];
    info.rows = p.dim() == 0 ? 1 : p.size(0);
    info.row_numel = info.rows == 0 ? 0 : p.numel() / info.rows;
    info.chunk_rows = (info.rows + world - 1) / world;
    const int64_t first = std::min(rank * info.chunk_rows, info.rows);
    info.local_rows = std::min(info.chunk_rows, info.rows - first);
    const torch::Tensor rows_view = info.whole.reshape({info.rows, info.row_numel});
    std::vector<int64_t> shape = p.sizes().vec();
    if (shape.empty()) {
      info.shard = info.local_rows == 1 ? info.whole : info.whole.reshape({1}).narrow(0, 0, 0);
    } else {
      shape[0] = info.local_rows;
      info.shard = rows_view.narrow(0, first, info.local_rows).view(shape);
    }
    if (options_.reshard_parameters) {
      // FULL_SHARD: the rows get storage of their own and the whole goes at
      // once, so setting up holds the model and one parameter's rows.
      info.shard = info.shard.clone();
      p.set_data(info.shard);
      info.whole = torch::Tensor();
    }
    params_.push_back(std::move(info));
  }
  build_units(world);
  std::vector<torch::Tensor> tensors;
  for (const auto& p : params_) tensors.push_back(p.tensor);
  hooks_.emplace(tensors, [this](size_t k) { on_gradient_ready(k); }, "ddp.find_unused_parameters", options_.hooks);
  if (options_.reshard_parameters) {
    for (auto& unit : units_) unit.sharded = true;
  }
}

void ShardedReducer::allocate_gradient(Unit& unit) {
  if (unit.grad.defined()) return;
  unit.grad = torch::zeros({unit.chunk_numel}, unit.options);
  for (size_t k : unit.params) {
    Param& p = params_[k];
    torch::Tensor view = unit.grad.narrow(0, p.offset, p.local_rows * p.row_numel);
    p.grad_shard = p.shard.dim() == 0 ? view.view({}) : view.view(p.shard.sizes());
  }
}

ShardedReducer::~ShardedReducer() {
  for (auto& p : params_) {
    // Left mid-step by an error: the parameter is whole again (its own
    // rows may be newer than the others'). FULL_SHARD keeps no whole to
    // return to without a collective: the parameter keeps its rows.
    if (units_[p.unit].sharded && !options_.reshard_parameters) p.tensor.set_data(p.whole);
  }
}

void ShardedReducer::build_units(int64_t world) {
  // Listed submodules first, one unit each; the rest in registration order,
  // a unit closing at a module boundary once it is big enough.
  std::map<std::string, size_t> listed_unit;
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> rest;
  std::vector<bool> matched(options_.unit_modules.size(), false);
  for (size_t k = 0; k < params_.size(); ++k) {
    bool placed = false;
    for (size_t m = 0; m < options_.unit_modules.size() && !placed; ++m) {
      const std::string& prefix = options_.unit_modules[m];
      if (params_[k].name.rfind(prefix + ".", 0) != 0) continue;
      matched[m] = true;
      auto [it, added] = listed_unit.emplace(prefix, groups.size());
      if (added) groups.emplace_back();
      groups[it->second].push_back(k);
      placed = true;
    }
    if (!placed) rest.push_back(k);
  }
  for (size_t m = 0; m < matched.size(); ++m) {
    if (!matched[m]) {
      throw std::invalid_argument(fmt::format("[FSDPStrategy] fsdp.wrap_modules: '{}' names no submodule with trainable "
                                              "parameters",
                                              options_.unit_modules[m]));
    }
  }
  std::vector<size_t> current;
  int64_t current_numel = 0;
  for (size_t k : rest) {
    const Param& p = params_[k];
    if (!current.empty()) {
      const Param& last = params_[current.back()];
      const bool big_enough = current_numel >= options_.min_unit_numel && module_of(last.name) != module_of(p.name);
      if (big_enough || !last.shard.options().type_equal(p.shard.options())) {
        groups.push_back(std::move(current));
        current.clear();
        current_numel = 0;
      }
    }
    current.push_back(k);
    current_numel += p.rows * p.row_numel;
  }
  if (!current.empty()) groups.push_back(std::move(current));

  // Launch order: the unit whose first parameter comes last first, as
  // backward produces the last layers' gradients first.
  std::map<size_t, std::string> listed_by_first;  // a listed unit's first parameter -> its module
  for (const auto& [name, g] : listed_unit) listed_by_first[groups[g].front()] = name;
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.front() > b.front(); });
  for (size_t u = 0; u < groups.size(); ++u) {
    const auto listed = listed_by_first.find(groups[u].front());
    if (listed != listed_by_first.end()) module_units_[listed->second] = u;
  }
  for (auto& g : groups) {
    Unit unit;
    for (size_t k : g) {
      Param& p = params_[k];
      if (!p.shard.options().type_equal(params_[g.front()].shard.options())) {
        throw std::invalid_argument(fmt::format("[FSDPStrategy] unit of '{}' mixes dtypes or devices ('{}')",
                                                params_[g.front()].name, p.name));
      }
      p.unit = units_.size();
      p.offset = unit.chunk_numel;
      unit.chunk_numel += p.chunk_rows * p.row_numel;
    }
    unit.options = params_[g.front()].shard.options();
    unit.params = std::move(g);
    units_.push_back(std::move(unit));
  }
  (void)world;
}

std::vector<std::vector<std::string>> ShardedReducer::unit_parameter_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& unit : units_) {
    out.emplace_back();
    for (size_t k : unit.params) out.back().push_back(params_[k].name);
  }
  return out;
}

void ShardedReducer::prepare(bool sync) {
  for (const auto& unit : units_) {
    if (unit.sharded && !unit.forward_gathered) {
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
  for (auto& unit : units_) {
    unit.pending = static_cast<int64_t>(unit.params.size());
    unit.work.reset();
  }
}

void ShardedReducer::on_gradient_ready(size_t k) {
  if (!syncing_ || !hooks_->mark_ready(k)) return;
  if (--units_[params_[k].unit].pending == 0) launch_ready_units();
}

void ShardedReducer::launch_ready_units() {
  // Strictly in unit order on every rank, so the collectives pair up.
  while (next_to_launch_ < units_.size() && units_[next_to_launch_].pending == 0) {
    settle_reductions(kReductionsInFlight - 1);
    launch_reduce_scatter(units_[next_to_launch_]);
    reducing_.push_back(next_to_launch_);
    peak_reductions_ = std::max<int64_t>(peak_reductions_, static_cast<int64_t>(reducing_.size()));
    if (in_backward_) {
      ++launched_in_backward_;
      // FULL_SHARD: the unit's backward is over; its whole parameters go now.
      free_unit(next_to_launch_);
    }
    ++next_to_launch_;
  }
}

void ShardedReducer::launch_reduce_scatter(Unit& unit) {
  torch::NoGradGuard no_grad;
  drop_prefetch(unit);  // prefetched but not used: unit.work is the reduce-scatter's now
  allocate_gradient(unit);
  const int64_t world = group_.size();
  // A mean, divided before the sum as DDP does (over the replicas' sum too),
  // in the same pass that lays the gradients out.
  const int64_t replicas = options_.replicas ? options_.replicas->size() : 1;
  const double scale = 1.0 / static_cast<double>(world * replicas);
  // Rank-major: chunk r holds rows [r*c, (r+1)*c) of every parameter, padded.
  unit.comm = torch::empty({world * unit.chunk_numel}, unit.options);
  for (size_t k : unit.params) {
    Param& p = params_[k];
    const torch::Tensor grad = p.tensor.grad();
    const torch::Tensor flat = grad.defined() ? grad.reshape({-1}) : torch::Tensor();
    for (int64_t r = 0; r < world; ++r) {
      const int64_t first = std::min(r * p.chunk_rows, p.rows);
      const int64_t rows = std::min(p.chunk_rows, p.rows - first);
      fill_padded(unit.comm.narrow(0, r * unit.chunk_numel + p.offset, p.chunk_rows * p.row_numel),
                  flat.defined() ? flat.narrow(0, first * p.row_numel, rows * p.row_numel) : torch::Tensor(), scale);
    }
    // The whole gradient is not needed any more: only the shard stays.
    p.tensor.mutable_grad() = torch::Tensor();
  }
  unit.work = group_.reduce_scatter_async(unit.grad, unit.comm);
}

void ShardedReducer::become_shards(Unit& unit) {
  for (size_t k : unit.params) {
    Param& p = params_[k];
    p.tensor.set_data(p.shard);
    p.tensor.mutable_grad() = p.grad_shard;
  }
  if (unit.full.defined()) resize_storage(unit.full, 0);  // FULL_SHARD: the whole parameters' memory goes
  unit.sharded = true;
}

void ShardedReducer::finish() {
  in_backward_ = false;
  if (!syncing_) return;
  for (auto& unit : units_) {
    if (unit.pending == 0) continue;
    for (size_t k : unit.params) {
      if (hooks_->is_ready(k)) continue;
      // Unused (zero) or accumulated without a hook call.
      hooks_->mark_missing(k, options_.find_unused_parameters || params_[k].tensor.grad().defined(),
                           "ShardedReducer::finish", params_[k].name, group_.rank());
    }
    unit.pending = 0;
  }
  launch_ready_units();
  settle_reductions(0);
  for (auto& unit : units_) {
    if (!unit.replica_work) continue;
    options_.replicas->wait(unit.replica_work, "all_reduce");
    unit.replica_work.reset();
  }
  for (auto& unit : units_) {
    drop_prefetch(unit);  // of rows the step is about to change
    become_shards(unit);
  }
}

void ShardedReducer::settle_reductions(size_t in_flight) {
  while (!reducing_.empty()) {
    Unit& unit = units_[reducing_.front()];
    if (reducing_.size() <= in_flight && !unit.work->isCompleted()) return;
    group_.wait(unit.work, "reduce_scatter");
    unit.work.reset();
    unit.comm = torch::Tensor();  // a whole unit's gradients
    if (options_.replicas) unit.replica_work = options_.replicas->all_reduce_async(unit.grad, ReduceOp::Sum);
    reducing_.pop_front();
  }
}

void ShardedReducer::shard_from_whole(const std::unordered_set<const void*>& params) {
  torch::NoGradGuard no_grad;
  for (auto& unit : units_) {
    if (unit.sharded) continue;
    bool touched = false;
    for (size_t k : unit.params) touched = touched || params.count(params_[k].tensor.unsafeGetTensorImpl()) > 0;
    if (!touched) continue;
    allocate_gradient(unit);
    for (size_t k : unit.params) {
      Param& p = params_[k];
      const torch::Tensor grad = p.tensor.grad();
      if (grad.defined()) {
        p.grad_shard.copy_(shard_of(p.tensor, grad));
      } else {
        p.grad_shard.zero_();
      }
    }
    become_shards(unit);
  }
}

void ShardedReducer::start_all_gather(Unit& unit) {
  const int64_t world = group_.size();
  unit.comm_input = torch::empty({unit.chunk_numel}, unit.options);
  for (size_t k : unit.params) {
    const Param& p = params_[k];
    fill_padded(unit.comm_input.narrow(0, p.offset, p.chunk_rows * p.row_numel), p.shard.reshape({-1}));
  }
  unit.comm = torch::empty({world * unit.chunk_numel}, unit.options);
  unit.work = group_.all_gather_into_async(unit.comm, unit.comm_input);
  unit.gathering = true;
}

void ShardedReducer::gather() {
  if (options_.reshard_parameters) {
    // The gradient shards are views of the unit's buffer, which
    // zero_grad() cannot detach: the step is done with them.
    for (auto& p : params_) p.tensor.mutable_grad() = torch::Tensor();
    // FULL_SHARD keeps the step's shards; automatic optimization gathers
    // before the next forward. Manual optimization may run a forward right
    // after a step (two optimizers in one training_step): whole at once.
    if (!options_.hooks) unshard();
    return;
  }
  torch::NoGradGuard no_grad;
  // Start every unit's all-gather, then finish them in order.
  for (auto& unit : units_) {
    if (unit.sharded) start_all_gather(unit);
  }
  for (auto& unit : units_) {
    if (!unit.sharded) continue;
    group_.wait(unit.work, "all_gather");
    unit.work.reset();
    unit.gathering = false;
    copy_gathered_rows(unit, /*skip_own=*/true);
    for (size_t k : unit.params) params_[k].tensor.mutable_grad() = torch::Tensor();
    unit.comm = torch::Tensor();
    unit.comm_input = torch::Tensor();
    unit.sharded = false;
  }
}

void ShardedReducer::copy_gathered_rows(Unit& unit, bool skip_own) {
  for (size_t k : unit.params) {
    Param& p = params_[k];
    const torch::Tensor flat = p.whole.view({-1});
    for (int64_t r = 0; r < group_.size(); ++r) {
      const int64_t first = std::min(r * p.chunk_rows, p.rows);
      const int64_t rows = std::min(p.chunk_rows, p.rows - first);
      if (rows == 0 || (skip_own && r == group_.rank())) continue;
      flat.narrow(0, first * p.row_numel, rows * p.row_numel)
          .copy_(unit.comm.narrow(0, r * unit.chunk_numel + p.offset, rows * p.row_numel));
    }
    p.tensor.set_data(p.whole);
  }
}

void ShardedReducer::finish_unshard(Unit& unit) {
  group_.wait(unit.work, "all_gather");
  unit.work.reset();
  unit.gathering = false;
  if (!unit.full.defined()) {
    // One buffer for the unit's whole parameters, one after another; the
    // views stay for the run, the memory comes and goes (resize_storage).
    int64_t numel = 0;
    for (size_t k : unit.params) numel += params_[k].rows * params_[k].row_numel;
    unit.full = torch::empty({numel}, unit.options);
    int64_t at = 0;
    for (size_t k : unit.params) {
      Param& p = params_[k];
      p.whole = unit.full.narrow(0, at, p.rows * p.row_numel).view(p.shape);
      at += p.rows * p.row_numel;
    }
  } else {
    resize_storage(unit.full, static_cast<size_t>(unit.full.numel()) * unit.full.element_size());
  }
  copy_gathered_rows(unit, /*skip_own=*/false);
  unit.comm = torch::Tensor();
  unit.comm_input = torch::Tensor();
  unit.sharded = false;
  const auto whole = std::count_if(units_.begin(), units_.end(), [](const Unit& u) { return !u.sharded; });
  peak_whole_units_ = std::max<int64_t>(peak_whole_units_, whole);
}

void ShardedReducer::unshard() {
  if (!options_.reshard_parameters) return;
  torch::NoGradGuard no_grad;
  for (auto& unit : units_) {
    if (unit.sharded && !unit.forward_gathered && !unit.gathering) start_all_gather(unit);
  }
  for (auto& unit : units_) {
    if (unit.sharded && !unit.forward_gathered) finish_unshard(unit);
  }
}

void ShardedReducer::unshard_unit(size_t index) {
  Unit& unit = units_.at(index);
  if (!options_.reshard_parameters || !unit.sharded) return;
  torch::NoGradGuard no_grad;
  if (!unit.gathering) start_all_gather(unit);
  finish_unshard(unit);
}

void ShardedReducer::prefetch_unit(size_t index) {
  Unit& unit = units_.at(index);
  if (!options_.reshard_parameters || !unit.sharded || unit.gathering) return;
  torch::NoGradGuard no_grad;
  start_all_gather(unit);
}

void ShardedReducer::drop_prefetch(Unit& unit) {
  if (!unit.gathering) return;
  group_.wait(unit.work, "all_gather");
  unit.work.reset();
  unit.gathering = false;
  unit.comm = torch::Tensor();
  unit.comm_input = torch::Tensor();
}

void ShardedReducer::free_unit(size_t index) {
  Unit& unit = units_.at(index);
  if (!options_.reshard_parameters || unit.sharded) return;
  for (size_t k : unit.params) {
    // An accumulation step's whole gradient waits for its step: stay whole.
    if (params_[k].tensor.grad().defined()) return;
  }
  for (size_t k : unit.params) params_[k].tensor.set_data(params_[k].shard);
  resize_storage(unit.full, 0);
  unit.sharded = true;
}

void ShardedReducer::unshard_all() {
  if (!options_.reshard_parameters) return;
  torch::NoGradGuard no_grad;
  for (auto& unit : units_) {
    if (unit.sharded && !unit.gathering) start_all_gather(unit);
  }
  for (auto& unit : units_) {
    if (unit.sharded) finish_unshard(unit);
  }
}

void ShardedReducer::reshard() {
  if (!options_.reshard_parameters) return;
  for (size_t u = 0; u < units_.size(); ++u) free_unit(u);
}

std::optional<size_t> ShardedReducer::unit_of_module(const std::string& module) const {
  const auto found = module_units_.find(module);
  if (found == module_units_.end()) return std::nullopt;
  return found->second;
}

void ShardedReducer::set_forward_gathered(size_t unit) { units_.at(unit).forward_gathered = true; }

const ShardedReducer::Param* ShardedReducer::find(const torch::Tensor& param) const {
  for (const auto& p : params_) {
    if (p.tensor.unsafeGetTensorImpl() == param.unsafeGetTensorImpl()) return &p;
  }
  return nullptr;
}

bool ShardedReducer::holds_shard(const torch::Tensor& param) const {
  const Param* p = find(param);
  return p != nullptr && units_[p->unit].sharded;
}

std::optional<std::vector<int64_t>> ShardedReducer::whole_shape(const torch::Tensor& param) const {
  const Param* p = find(param);
  if (p == nullptr) return std::nullopt;
  return p->shape;
}

std::optional<int64_t> ShardedReducer::local_rows(const torch::Tensor& param) const {
  const Param* p = find(param);
  if (p == nullptr) return std::nullopt;
  return p->local_rows;
}

torch::Tensor ShardedReducer::whole_of(const torch::Tensor& param, const torch::Tensor& state) {
  const Param* p = find(param);
  if (p == nullptr || !state.defined()) return state;
  // The same decision on every rank, so the all-gathers pair up: the
  // parameter itself by its unit's state, anything else (an optimizer's
  // moment) when it is shaped like the shard.
  const bool is_param = state.unsafeGetTensorImpl() == param.unsafeGetTensorImpl();
  if (is_param ? !units_[p->unit].sharded : state.sizes() != p->shard.sizes()) {
    return is_param ? state.detach() : state;
  }
  torch::NoGradGuard no_grad;
  const int64_t world = group_.size();
  const int64_t chunk = p->chunk_rows * p->row_numel;
  torch::Tensor input = torch::zeros({chunk}, state.options());
  if (p->local_rows > 0) input.narrow(0, 0, p->local_rows * p->row_numel).copy_(state.reshape({-1}));
  torch::Tensor output = torch::empty({world * chunk}, state.options());
  group_.wait(group_.all_gather_into_async(output, input), "all_gather");
  // Padded rows sit at the end of the last ranks' chunks: drop them.
  torch::Tensor whole = torch::empty(p->shape, state.options().requires_grad(false));
  torch::Tensor flat = whole.view({-1});
  for (int64_t r = 0; r < world; ++r) {
    const int64_t first = std::min(r * p->chunk_rows, p->rows);
    const int64_t rows = std::min(p->chunk_rows, p->rows - first);
    if (rows > 0) flat.narrow(0, first * p->row_numel, rows * p->row_numel).copy_(output.narrow(0, r * chunk, rows * p->row_numel));
  }
  return whole;
}

torch::Tensor ShardedReducer::shard_of(const torch::Tensor& param, const torch::Tensor& whole) const {
  const Param* p = find(param);
  if (p == nullptr || !whole.defined() || whole.sizes() != c10::IntArrayRef(p->shape)) return whole;
  if (whole.dim() == 0) return p->local_rows == 1 ? whole.clone() : whole.reshape({1}).narrow(0, 0, 0).clone();
  const int64_t first = std::min(group_.rank() * p->chunk_rows, p->rows);
  return whole.narrow(0, first, p->local_rows).clone();
}

std::vector<torch::Tensor> ShardedReducer::held_tensors() const {
  std::vector<torch::Tensor> out;
  for (const auto& unit : units_) {
    if (unit.grad.defined()) out.push_back(unit.grad);
  }
  return out;
}

int64_t ShardedReducer::largest_unit_numel() const {
  int64_t largest = 0;
  for (const auto& unit : units_) {
    int64_t numel = 0;
    for (size_t k : unit.params) numel += params_[k].rows * params_[k].row_numel;
    largest = std::max(largest, numel);
  }
  return largest;
}

}  // namespace fulgur
