#include <fulgur/strategies/sharding/unit_residency.hpp>

#include <fulgur/strategies/collectives/process_group.hpp>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>

namespace fulgur {
namespace {

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

}  // namespace

UnitResidency::UnitResidency(const ShardLayout& layout, ProcessGroup& group, bool reshard)
    : layout_(layout), group_(group), reshard_(reshard), units_(layout.units().size()) {
  const auto& params = layout_.params();
  for (size_t k = 0; k < params.size(); ++k) {
    torch::Tensor whole = params[k].tensor.detach();  // shares the parameter's storage: no copy
    torch::Tensor rows = layout_.rows_view(k, whole);
    if (reshard_) {
      // FULL_SHARD: the rows get storage of their own and the whole goes at
      // once, so setting up holds the model and one parameter's rows.
      rows = rows.clone();
      params[k].tensor.set_data(rows);
      whole = torch::Tensor();
    }
    whole_.push_back(whole);
    shards_.push_back(rows);
  }
  if (reshard_) {
    for (auto& unit : units_) unit.sharded = true;
  }
  packed_offset_.assign(params.size(), 0);
  for (size_t u = 0; u < units_.size(); ++u) {
    for (size_t k : layout_.units()[u].params) {
      const ShardLayout::Param& p = params[k];
      const int64_t bytes = p.rows * p.row_numel * static_cast<int64_t>(p.tensor.element_size());
      if (reshard_ && p.rows % layout_.world() == 0 && bytes >= kDirectBytes) {
        units_[u].direct.push_back(k);
        continue;
      }
      units_[u].packed.push_back(k);
      packed_offset_[k] = units_[u].packed_numel;
      units_[u].packed_numel += p.chunk_rows * p.row_numel;
    }
  }
}

UnitResidency::~UnitResidency() {
  const auto& params = layout_.params();
  for (size_t k = 0; k < params.size(); ++k) {
    // Left mid-step by an error: the parameter is whole again (its own
    // rows may be newer than the others'). FULL_SHARD keeps no whole to
    // return to without a collective: the parameter keeps its rows.
    if (units_[params[k].unit].sharded && !reshard_) params[k].tensor.set_data(whole_[k]);
  }
}

bool UnitResidency::holds_shard(const torch::Tensor& param) const {
  const auto k = layout_.find(param);
  return k && units_[layout_.params()[*k].unit].sharded;
}

void UnitResidency::become_shards(size_t index) {
  Unit& unit = units_[index];
  for (size_t k : layout_.units()[index].params) layout_.params()[k].tensor.set_data(shards_[k]);
  if (unit.full.defined()) resize_storage(unit.full, 0);  // FULL_SHARD: the whole values' memory goes
  unit.sharded = true;
}

void UnitResidency::start_all_gather(size_t index) {
  Unit& unit = units_[index];
  const ShardLayout::Unit& shape = layout_.units()[index];
  if (reshard_) allocate_full(index);  // where the parameters gathered by themselves land
  if (unit.packed_numel > 0) {
    unit.input = buffers_.take(unit.packed_numel, shape.options);
    for (size_t k : unit.packed) {
      const ShardLayout::Param& p = layout_.params()[k];
      ShardLayout::fill_padded(unit.input.narrow(0, packed_offset_[k], p.chunk_rows * p.row_numel),
                               shards_[k].reshape({-1}));
    }
    unit.gathered = buffers_.take(layout_.world() * unit.packed_numel, shape.options);
    unit.works.push_back(group_.all_gather_into_async(unit.gathered, unit.input));
  }
  for (size_t k : unit.direct) {
    // Rank r's rows are block r of the whole value: gather them straight there.
    torch::Tensor whole = whole_[k].view({-1});
    torch::Tensor rows = shards_[k].view({-1});
    unit.works.push_back(group_.all_gather_into_async(whole, rows));
  }
  unit.gathering = true;
}

void UnitResidency::finish_all_gather(size_t index) {
  Unit& unit = units_[index];
  for (auto& work : unit.works) group_.wait(work, "all_gather");
  unit.works.clear();
  unit.gathering = false;
}

void UnitResidency::allocate_full(size_t index) {
  Unit& unit = units_[index];
  if (unit.full.defined()) {
    resize_storage(unit.full, static_cast<size_t>(unit.full.numel()) * unit.full.element_size());
    return;
  }
  // One buffer for the unit's whole values, one after another; the views
  // stay for the run, the memory comes and goes (resize_storage).
  int64_t numel = 0;
  for (size_t k : layout_.units()[index].params) numel += layout_.params()[k].rows * layout_.params()[k].row_numel;
  unit.full = torch::empty({numel}, layout_.units()[index].options);
  int64_t at = 0;
  for (size_t k : layout_.units()[index].params) {
    const ShardLayout::Param& p = layout_.params()[k];
    whole_[k] = unit.full.narrow(0, at, p.rows * p.row_numel).view(p.shape);
    at += p.rows * p.row_numel;
  }
}

void UnitResidency::gather(bool unshard_now) {
  const auto& params = layout_.params();
  if (reshard_) {
    // The gradient shards are views of the unit's buffer, which
    // zero_grad() cannot detach: the step is done with them.
    for (const auto& p : params) p.tensor.mutable_grad() = torch::Tensor();
    if (unshard_now) unshard();
    return;
  }
  torch::NoGradGuard no_grad;
  // Start every unit's all-gather, then finish them in order.
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].sharded) start_all_gather(u);
  }
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit& unit = units_[u];
    if (!unit.sharded) continue;
    finish_all_gather(u);
    copy_gathered_rows(u, /*skip_own=*/true);
    for (size_t k : layout_.units()[u].params) params[k].tensor.mutable_grad() = torch::Tensor();
    buffers_.give(unit.gathered);
    buffers_.give(unit.input);
    unit.sharded = false;
  }
}

void UnitResidency::copy_gathered_rows(size_t index, bool skip_own) {
  const Unit& unit = units_[index];
  const int64_t chunk = unit.packed_numel;
  for (size_t k : unit.packed) {
    const ShardLayout::Param& p = layout_.params()[k];
    const torch::Tensor flat = whole_[k].view({-1});
    for (int64_t r = 0; r < layout_.world(); ++r) {
      const int64_t rows = p.rows_of(r);
      if (rows == 0 || (skip_own && r == layout_.rank())) continue;
      flat.narrow(0, p.first_row(r) * p.row_numel, rows * p.row_numel)
          .copy_(unit.gathered.narrow(0, r * chunk + packed_offset_[k], rows * p.row_numel));
    }
  }
  for (size_t k : layout_.units()[index].params) layout_.params()[k].tensor.set_data(whole_[k]);
}

void UnitResidency::finish_unshard(size_t index) {
  Unit& unit = units_[index];
  finish_all_gather(index);
  copy_gathered_rows(index, /*skip_own=*/false);
  buffers_.give(unit.gathered);
  buffers_.give(unit.input);
  unit.sharded = false;
  const auto whole = std::count_if(units_.begin(), units_.end(), [](const Unit& u) { return !u.sharded; });
  peak_whole_units_ = std::max<int64_t>(peak_whole_units_, whole);
}

void UnitResidency::unshard() {
  if (!reshard_) return;
  torch::NoGradGuard no_grad;
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].sharded && !units_[u].forward_gathered && !units_[u].gathering) start_all_gather(u);
  }
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].sharded && !units_[u].forward_gathered) finish_unshard(u);
  }
}

void UnitResidency::unshard_unit(size_t index) {
  if (!reshard_ || !units_.at(index).sharded) return;
  torch::NoGradGuard no_grad;
  if (!units_[index].gathering) start_all_gather(index);
  finish_unshard(index);
}

void UnitResidency::prefetch_unit(size_t index) {
  const Unit& unit = units_.at(index);
  if (!reshard_ || !unit.sharded || unit.gathering) return;
  torch::NoGradGuard no_grad;
  start_all_gather(index);
}

void UnitResidency::drop_prefetch(size_t index) {
  Unit& unit = units_[index];
  if (!unit.gathering) return;
  finish_all_gather(index);
  buffers_.give(unit.gathered);
  buffers_.give(unit.input);
  if (reshard_ && unit.sharded) resize_storage(unit.full, 0);  // the whole values' memory goes again
}

void UnitResidency::free_unit(size_t index) {
  Unit& unit = units_.at(index);
  if (!reshard_ || unit.sharded) return;
  const auto& params = layout_.params();
  for (size_t k : layout_.units()[index].params) {
    // An accumulation step's whole gradient waits for its step: stay whole.
    if (params[k].tensor.grad().defined()) return;
  }
  for (size_t k : layout_.units()[index].params) params[k].tensor.set_data(shards_[k]);
  resize_storage(unit.full, 0);
  unit.sharded = true;
}

void UnitResidency::unshard_all() {
  if (!reshard_) return;
  torch::NoGradGuard no_grad;
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].sharded && !units_[u].gathering) start_all_gather(u);
  }
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].sharded) finish_unshard(u);
  }
}

void UnitResidency::reshard() {
  if (!reshard_) return;
  for (size_t u = 0; u < units_.size(); ++u) free_unit(u);
}

torch::Tensor UnitResidency::whole_of(const torch::Tensor& param, const torch::Tensor& state) {
  const auto k = layout_.find(param);
  if (!k || !state.defined()) return state;
  const ShardLayout::Param& p = layout_.params()[*k];
  // The same decision on every rank, so the all-gathers pair up: the
  // parameter itself by its unit's state, anything else (an optimizer's
  // moment) when it is shaped like the shard.
  const bool is_param = state.unsafeGetTensorImpl() == param.unsafeGetTensorImpl();
  if (is_param ? !units_[p.unit].sharded : state.sizes() != shards_[*k].sizes()) {
    return is_param ? state.detach() : state;
  }
  torch::NoGradGuard no_grad;
  const int64_t world = layout_.world();
  const int64_t chunk = p.chunk_rows * p.row_numel;
  torch::Tensor input = torch::zeros({chunk}, state.options());
  if (p.local_rows > 0) input.narrow(0, 0, p.local_rows * p.row_numel).copy_(state.reshape({-1}));
  torch::Tensor output = torch::empty({world * chunk}, state.options());
  group_.wait(group_.all_gather_into_async(output, input), "all_gather");
  // Padded rows sit at the end of the last ranks' chunks: drop them.
  torch::Tensor whole = torch::empty(p.shape, state.options().requires_grad(false));
  torch::Tensor flat = whole.view({-1});
  for (int64_t r = 0; r < world; ++r) {
    const int64_t rows = p.rows_of(r);
    if (rows > 0) flat.narrow(0, p.first_row(r) * p.row_numel, rows * p.row_numel).copy_(output.narrow(0, r * chunk, rows * p.row_numel));
  }
  return whole;
}

}  // namespace fulgur
