#include <fulgur/strategies/sharding/shard_layout.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fulgur {
namespace {

std::string module_of(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

}  // namespace

ShardLayout::ShardLayout(const std::vector<torch::Tensor>& parameters, const std::vector<std::string>& names,
                         int64_t world, int64_t rank, const std::vector<std::string>& unit_modules,
                         int64_t min_unit_numel)
    : world_(world), rank_(rank) {
  for (size_t k = 0; k < parameters.size(); ++k) {
    const torch::Tensor& p = parameters[k];
    if (!p.requires_grad()) continue;  // nothing to reduce; it stays whole
    if (!p.is_contiguous()) {
      throw std::runtime_error(fmt::format("[ShardLayout] parameter '{}' is not contiguous", names[k]));
    }
    Param info;
    info.tensor = p;
    info.shape = p.sizes().vec();
    info.name = names[k];
    info.rows = p.dim() == 0 ? 1 : p.size(0);
    info.row_numel = info.rows == 0 ? 0 : p.numel() / info.rows;
    info.chunk_rows = (info.rows + world - 1) / world;
    info.local_rows = info.rows_of(rank);
    params_.push_back(std::move(info));
  }
  build_units(unit_modules, min_unit_numel);
}

void ShardLayout::build_units(const std::vector<std::string>& unit_modules, int64_t min_unit_numel) {
  // Listed submodules first, one unit each; the rest in registration order,
  // a unit closing at a module boundary once it is big enough.
  std::map<std::string, size_t> listed_unit;
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> rest;
  std::vector<bool> matched(unit_modules.size(), false);
  for (size_t k = 0; k < params_.size(); ++k) {
    bool placed = false;
    for (size_t m = 0; m < unit_modules.size() && !placed; ++m) {
      const std::string& prefix = unit_modules[m];
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
                                              unit_modules[m]));
    }
  }
  auto same_type = [&](size_t a, size_t b) { return params_[a].tensor.options().type_equal(params_[b].tensor.options()); };
  std::vector<size_t> current;
  int64_t current_numel = 0;
  for (size_t k : rest) {
    const Param& p = params_[k];
    if (!current.empty()) {
      const Param& last = params_[current.back()];
      const bool big_enough = current_numel >= min_unit_numel && module_of(last.name) != module_of(p.name);
      if (big_enough || !same_type(current.back(), k)) {
        groups.push_back(std::move(current));
        current.clear();
        current_numel = 0;
      }
    }
    current.push_back(k);
    current_numel += p.rows * p.row_numel;
  }
  if (!current.empty()) groups.push_back(std::move(current));

  // Launch order: the unit whose first parameter comes last first.
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
      if (!same_type(k, g.front())) {
        throw std::invalid_argument(fmt::format("[FSDPStrategy] unit of '{}' mixes dtypes or devices ('{}')",
                                                params_[g.front()].name, p.name));
      }
      p.unit = units_.size();
      p.offset = unit.chunk_numel;
      unit.chunk_numel += p.chunk_rows * p.row_numel;
    }
    unit.options = params_[g.front()].tensor.options().requires_grad(false);
    unit.params = std::move(g);
    units_.push_back(std::move(unit));
  }
}

std::optional<size_t> ShardLayout::find(const torch::Tensor& param) const {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k].tensor.unsafeGetTensorImpl() == param.unsafeGetTensorImpl()) return k;
  }
  return std::nullopt;
}

std::optional<size_t> ShardLayout::unit_of_module(const std::string& module) const {
  const auto found = module_units_.find(module);
  if (found == module_units_.end()) return std::nullopt;
  return found->second;
}

std::vector<std::vector<std::string>> ShardLayout::unit_parameter_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& unit : units_) {
    out.emplace_back();
    for (size_t k : unit.params) out.back().push_back(params_[k].name);
  }
  return out;
}

int64_t ShardLayout::largest_unit_numel() const {
  int64_t largest = 0;
  for (const auto& unit : units_) {
    int64_t numel = 0;
    for (size_t k : unit.params) numel += params_[k].rows * params_[k].row_numel;
    largest = std::max(largest, numel);
  }
  return largest;
}

std::optional<std::vector<int64_t>> ShardLayout::whole_shape(const torch::Tensor& param) const {
  const auto k = find(param);
  if (!k) return std::nullopt;
  return params_[*k].shape;
}

std::optional<int64_t> ShardLayout::local_rows(const torch::Tensor& param) const {
  const auto k = find(param);
  if (!k) return std::nullopt;
  return params_[*k].local_rows;
}

torch::Tensor ShardLayout::shard_of(const torch::Tensor& param, const torch::Tensor& whole) const {
  const auto k = find(param);
  if (!k || !whole.defined() || whole.sizes() != c10::IntArrayRef(params_[*k].shape)) return whole;
  return rows_view(*k, whole).clone();
}

torch::Tensor ShardLayout::rows_view(size_t param, const torch::Tensor& whole) const {
  const Param& p = params_[param];
  if (whole.dim() == 0) return p.local_rows == 1 ? whole : whole.reshape({1}).narrow(0, 0, 0);
  return whole.narrow(0, p.first_row(rank_), p.local_rows);
}

void ShardLayout::fill_padded(torch::Tensor region, const torch::Tensor& values, double scale) {
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

}  // namespace fulgur
