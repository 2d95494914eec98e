#include <fulgur/strategies/sharded_reducer.hpp>

#include <fulgur/strategies/process_group.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace fulgur {
namespace {

/// Calls back into the reducer once a parameter's .grad holds this step's sum.
class ShardReadyHook : public torch::autograd::PostAccumulateGradHook {
 public:
  explicit ShardReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  void operator()(const torch::autograd::Variable&) override { on_ready_(); }

 private:
  std::function<void()> on_ready_;
};

std::string module_of(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
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
    params_.push_back(std::move(info));
  }
  build_units(world);
  ready_.assign(params_.size(), false);

  torch::NoGradGuard no_grad;
  for (auto& unit : units_) {
    const torch::Tensor& first = params_[unit.params.front()].whole;
    unit.grad = torch::zeros({unit.chunk_numel}, first.options());
    for (size_t k : unit.params) {
      Param& p = params_[k];
      torch::Tensor view = unit.grad.narrow(0, p.offset, p.local_rows * p.row_numel);
      p.grad_shard = p.shard.dim() == 0 ? view.view({}) : view.view(p.shard.sizes());
    }
  }
  if (options_.hooks) {
    for (size_t k = 0; k < params_.size(); ++k) {
      torch::autograd::impl::set_post_acc_grad_hooks(
          params_[k].tensor, std::make_unique<ShardReadyHook>([this, k] { on_gradient_ready(k); }));
    }
  }
}

ShardedReducer::~ShardedReducer() {
  for (auto& p : params_) {
    if (options_.hooks) torch::autograd::impl::set_post_acc_grad_hooks(p.tensor, nullptr);
    // Left mid-step by an error: the parameter is whole again (its own
    // rows may be newer than the others').
    if (units_[p.unit].sharded) p.tensor.set_data(p.whole);
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
      if (big_enough || !last.whole.options().type_equal(p.whole.options())) {
        groups.push_back(std::move(current));
        current.clear();
        current_numel = 0;
      }
    }
    current.push_back(k);
    current_numel += p.whole.numel();
  }
  if (!current.empty()) groups.push_back(std::move(current));

  // Launch order: the unit whose first parameter comes last first, as
  // backward produces the last layers' gradients first.
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.front() > b.front(); });
  for (auto& g : groups) {
    Unit unit;
    for (size_t k : g) {
      Param& p = params_[k];
      if (!p.whole.options().type_equal(params_[g.front()].whole.options())) {
        throw std::invalid_argument(fmt::format("[FSDPStrategy] unit of '{}' mixes dtypes or devices ('{}')",
                                                params_[g.front()].name, p.name));
      }
      p.unit = units_.size();
      p.offset = unit.chunk_numel;
      unit.chunk_numel += p.chunk_rows * p.row_numel;
    }
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
    if (unit.sharded) {
      throw std::logic_error("[ShardedReducer::prepare] backward while parameters are sharded (no optimizer step "
                             "after the last gradient synchronisation)");
    }
  }
  syncing_ = sync;
  in_backward_ = true;
  launched_in_backward_ = 0;
  next_to_launch_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (auto& unit : units_) {
    unit.pending = static_cast<int64_t>(unit.params.size());
    unit.work.reset();
  }
}

void ShardedReducer::on_gradient_ready(size_t k) {
  if (!syncing_ || ready_[k]) return;
  ready_[k] = true;
  if (--units_[params_[k].unit].pending == 0) launch_ready_units();
}

void ShardedReducer::launch_ready_units() {
  // Strictly in unit order on every rank, so the collectives pair up.
  while (next_to_launch_ < units_.size() && units_[next_to_launch_].pending == 0) {
    launch_reduce_scatter(units_[next_to_launch_]);
    if (in_backward_) ++launched_in_backward_;
    ++next_to_launch_;
  }
}

void ShardedReducer::launch_reduce_scatter(Unit& unit) {
  torch::NoGradGuard no_grad;
  const int64_t world = group_.size();
  // Rank-major: chunk r holds rows [r*c, (r+1)*c) of every parameter, padded.
  unit.comm = torch::zeros({world * unit.chunk_numel}, unit.grad.options());
  for (size_t k : unit.params) {
    Param& p = params_[k];
    const torch::Tensor grad = p.tensor.grad();
    if (grad.defined()) {
      const torch::Tensor flat = grad.reshape({-1});
      for (int64_t r = 0; r < world; ++r) {
        const int64_t first = std::min(r * p.chunk_rows, p.rows);
        const int64_t rows = std::min(p.chunk_rows, p.rows - first);
        if (rows == 0) continue;
        unit.comm.narrow(0, r * unit.chunk_numel + p.offset, rows * p.row_numel)
            .copy_(flat.narrow(0, first * p.row_numel, rows * p.row_numel));
      }
    }
    // The whole gradient is not needed any more: only the shard stays.
    p.tensor.mutable_grad() = torch::Tensor();
  }
  unit.comm.div_(static_cast<double>(world));  // a mean, divided before the sum as DDP does
  unit.work = group_.reduce_scatter_async(unit.grad, unit.comm);
}

void ShardedReducer::become_shards(Unit& unit) {
  for (size_t k : unit.params) {
    Param& p = params_[k];
    p.tensor.set_data(p.shard);
    p.tensor.mutable_grad() = p.grad_shard;
  }
  unit.sharded = true;
}

void ShardedReducer::finish() {
  in_backward_ = false;
  if (!syncing_) return;
  for (auto& unit : units_) {
    if (unit.pending == 0) continue;
    for (size_t k : unit.params) {
      if (ready_[k]) continue;
      if (!options_.find_unused_parameters && !params_[k].tensor.grad().defined()) {
        throw std::runtime_error(fmt::format(
            "[ShardedReducer::finish] parameter '{}' received no gradient in this step (rank {}); set "
            "ddp.find_unused_parameters=true if the model does not use every parameter every step",
            params_[k].name, group_.rank()));
      }
      ready_[k] = true;  // unused (zero) or accumulated without a hook call
    }
    unit.pending = 0;
  }
  launch_ready_units();
  for (auto& unit : units_) {
    group_.wait(unit.work, "reduce_scatter");
    unit.work.reset();
    unit.comm = torch::Tensor();
    become_shards(unit);
  }
}

void ShardedReducer::shard_from_whole(const std::unordered_set<const void*>& params) {
  torch::NoGradGuard no_grad;
  for (auto& unit : units_) {
    if (unit.sharded) continue;
    bool touched = false;
    for (size_t k : unit.params) touched = touched || params.count(params_[k].tensor.unsafeGetTensorImpl()) > 0;
    if (!touched) continue;
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

void ShardedReducer::gather() {
  torch::NoGradGuard no_grad;
  const int64_t world = group_.size();
  // Start every unit's all-gather, then finish them in order.
  for (auto& unit : units_) {
    if (!unit.sharded) continue;
    unit.comm_input = torch::zeros({unit.chunk_numel}, unit.grad.options());
    for (size_t k : unit.params) {
      const Param& p = params_[k];
      if (p.local_rows > 0) unit.comm_input.narrow(0, p.offset, p.local_rows * p.row_numel).copy_(p.shard.reshape({-1}));
    }
    unit.comm = torch::empty({world * unit.chunk_numel}, unit.grad.options());
    unit.work = group_.all_gather_into_async(unit.comm, unit.comm_input);
  }
  for (auto& unit : units_) {
    if (!unit.sharded) continue;
    group_.wait(unit.work, "all_gather");
    unit.work.reset();
    for (size_t k : unit.params) {
      Param& p = params_[k];
      const torch::Tensor flat = p.whole.view({-1});
      for (int64_t r = 0; r < world; ++r) {
        const int64_t first = std::min(r * p.chunk_rows, p.rows);
        const int64_t rows = std::min(p.chunk_rows, p.rows - first);
        if (rows == 0 || r == group_.rank()) continue;  // our own rows are already there
        flat.narrow(0, first * p.row_numel, rows * p.row_numel)
            .copy_(unit.comm.narrow(0, r * unit.chunk_numel + p.offset, rows * p.row_numel));
      }
      p.tensor.set_data(p.whole);
      p.tensor.mutable_grad() = torch::Tensor();
    }
    unit.comm = torch::Tensor();
    unit.comm_input = torch::Tensor();
    unit.sharded = false;
  }
}

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

std::optional<int64_t> ShardedReducer::local_rows(const torch::Tensor& param) const {
  const Param* p = find(param);
  if (p == nullptr) return std::nullopt;
  return p->local_rows;
}

torch::Tensor ShardedReducer::whole_of(const torch::Tensor& param, const torch::Tensor& state) {
  const Param* p = find(param);
  // The same decision on every rank (shard-shaped state), so the all-gathers pair up.
  if (p == nullptr || !state.defined() || state.sizes() != p->shard.sizes()) {
    return state;
  }
  torch::NoGradGuard no_grad;
  const int64_t world = group_.size();
  const int64_t chunk = p->chunk_rows * p->row_numel;
  torch::Tensor input = torch::zeros({chunk}, state.options());
  if (p->local_rows > 0) input.narrow(0, 0, p->local_rows * p->row_numel).copy_(state.reshape({-1}));
  torch::Tensor output = torch::empty({world * chunk}, state.options());
  group_.wait(group_.all_gather_into_async(output, input), "all_gather");
  // Padded rows sit at the end of the last ranks' chunks: drop them.
  torch::Tensor whole = torch::empty(p->whole.sizes(), state.options());
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
  if (p == nullptr || !whole.defined() || whole.sizes() != p->whole.sizes() || whole.sizes() == p->shard.sizes()) {
    return whole;
  }
  if (whole.dim() == 0) return whole.reshape({1}).narrow(0, 0, 0);
  const int64_t first = std::min(group_.rank() * p->chunk_rows, p->rows);
  return whole.narrow(0, first, p->local_rows).clone();
}

int64_t ShardedReducer::gradient_bytes() const {
  int64_t bytes = 0;
  for (const auto& unit : units_) bytes += unit.grad.nbytes();
  return bytes;
}

}  // namespace fulgur
