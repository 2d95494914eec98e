#include <fulgur/modules/metrics/metric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

torch::Tensor safe_divide(const torch::Tensor& num, const torch::Tensor& den) {
  const torch::Tensor zero = den == 0;
  return torch::where(zero, torch::zeros_like(num, num.options().dtype(torch::kFloat64)),
                      num.to(torch::kFloat64) / torch::where(zero, torch::ones_like(den), den).to(torch::kFloat64));
}

void Metric::add_state(const std::string& key, const torch::Tensor& default_value, Reduction reduction,
                       bool persistent) {
  for (const auto& s : states_) {
    if (s.name == key) throw std::invalid_argument(fmt::format("[{}::add_state] state '{}' is declared twice", name(), key));
  }
  if (reduction == Reduction::Cat && (default_value.dim() == 0 || default_value.size(0) != 0)) {
    throw std::invalid_argument(fmt::format(
        "[{}::add_state] Cat state '{}' needs an empty default of shape [0, ...], got {} elements", name(), key,
        default_value.numel()));
  }
  State s{key, default_value.detach().clone(), reduction, persistent, {}, {}};
  if (reduction != Reduction::Cat) s.value = s.default_value.clone();
  states_.push_back(std::move(s));
}

Metric::State& Metric::find(const std::string& key, const char* method) {
  for (auto& s : states_) {
    if (s.name == key) return s;
  }
  throw std::out_of_range(fmt::format("[{}::{}] no state named '{}'", name(), method, key));
}

const Metric::State& Metric::find(const std::string& key, const char* method) const {
  return const_cast<Metric*>(this)->find(key, method);
}

void Metric::persistent(bool mode) {
  for (auto& s : states_) s.persistent = mode;
}

std::vector<std::pair<std::string, torch::Tensor>> Metric::persistent_states() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& s : states_) {
    if (!s.persistent) continue;
    if (s.reduction != Reduction::Cat) {
      out.emplace_back(s.name, s.value);
    } else {
      out.emplace_back(s.name, s.rows.empty() ? s.default_value : torch::cat(s.rows));
    }
  }
  return out;
}

void Metric::check_state(const std::string& key, const torch::Tensor& value) const {
  const State& s = find(key, "load_state");
  if (!s.persistent) {
    throw std::invalid_argument(fmt::format("[{}::load_state] state '{}' is not persistent", name(), key));
  }
  const auto expected = s.default_value.sizes();
  const bool fits = value.defined() && (s.reduction == Reduction::Cat
                                            ? value.dim() == s.default_value.dim() &&
                                                  value.sizes().slice(1) == expected.slice(1)
                                            : value.sizes() == s.value.sizes());
  if (!fits) {
    // A Cat state holds any number of rows: N stands for their count.
    std::vector<std::string> dims;
    if (s.reduction == Reduction::Cat) dims.emplace_back("N");
    for (const int64_t d : s.reduction == Reduction::Cat ? expected.slice(1) : s.value.sizes()) {
      dims.push_back(std::to_string(d));
    }
    throw std::invalid_argument(fmt::format(
        "[{}::load_state] state '{}' is [{}], the checkpoint has {}", name(), key, fmt::join(dims, ", "),
        value.defined() ? fmt::format("[{}]", fmt::join(value.sizes(), ", ")) : std::string("an undefined tensor")));
  }
}

void Metric::load_state(const std::string& key, const torch::Tensor& value) {
  check_state(key, value);
  State& s = find(key, "load_state");
  const torch::Tensor v = value.detach().to(s.default_value.device(), s.default_value.scalar_type()).clone();
  if (s.reduction == Reduction::Cat) {
    s.rows.clear();
    if (v.size(0) > 0) s.rows.push_back(v);
  } else {
    s.value = v;
  }
  computed_ = torch::Tensor();
  batch_value_ = torch::Tensor();
}

torch::Tensor& Metric::state(const std::string& key) {
  State& s = find(key, "state");
  if (s.reduction == Reduction::Cat) {
    throw std::logic_error(fmt::format("[{}::state] '{}' is a Cat state: use append/cat_state", name(), key));
  }
  return s.value;
}

void Metric::append(const std::string& key, const torch::Tensor& rows) {
  State& s = find(key, "append");
  if (s.reduction != Reduction::Cat) {
    throw std::logic_error(fmt::format("[{}::append] '{}' is not a Cat state", name(), key));
  }
  s.rows.push_back(rows.detach().to(s.default_value.scalar_type()));
}

torch::Tensor Metric::cat_state(const std::string& key) {
  State& s = find(key, "cat_state");
  if (s.reduction != Reduction::Cat) {
    throw std::logic_error(fmt::format("[{}::cat_state] '{}' is not a Cat state", name(), key));
  }
  if (s.rows.empty()) return s.default_value;
  if (s.rows.size() > 1) s.rows = {torch::cat(s.rows)};  // later calls reuse the joined rows
  return s.rows.front();
}

void Metric::begin_update(const torch::Device& device) {
  if (!states_.empty() && states_.front().default_value.device() != device) move_states(device);
  computed_ = torch::Tensor();
  batch_value_ = torch::Tensor();
  ++update_count_;
}

void Metric::move_states(const torch::Device& device) {
  for (auto& s : states_) {
    s.default_value = s.default_value.to(device);
    if (s.value.defined()) s.value = s.value.to(device);
    for (auto& r : s.rows) r = r.to(device);
  }
}

void Metric::reset() {
  for (auto& s : states_) {
    if (s.reduction == Reduction::Cat) {
      s.rows.clear();
    } else {
      s.value = s.default_value.clone();
    }
  }
  update_count_ = 0;
  computed_ = torch::Tensor();
  batch_value_ = torch::Tensor();
}

torch::Tensor Metric::compute() {
  if (computed_.defined()) return computed_;
  if (runtime_ == nullptr || runtime_->world_size() <= 1) {
    computed_ = compute_value().detach();
    return computed_;
  }
  // Compute from the reduced states, then put this process's back, so
  // updates after compute() go on from the local states (torchmetrics' unsync).
  const std::vector<State> local = states_;
  try {
    sync_states(*runtime_);
    computed_ = compute_value().detach();
  } catch (...) {
    states_ = local;
    throw;
  }
  states_ = local;
  return computed_;
}

void Metric::sync_states(ModuleRuntime& runtime) {
  const int64_t world = runtime.world_size();
  for (auto& s : states_) {
    switch (s.reduction) {
      case Reduction::Sum: s.value = runtime.all_reduce(s.value, ReduceOp::Sum); break;
      case Reduction::Mean: s.value = runtime.all_reduce(s.value, ReduceOp::Sum) / world; break;
      case Reduction::Max: s.value = runtime.all_reduce(s.value, ReduceOp::Max); break;
      case Reduction::Min: s.value = runtime.all_reduce(s.value, ReduceOp::Min); break;
      case Reduction::Cat: {
        // all_gather needs one shape on every rank: gather the lengths, pad
        // to the longest, gather, and trim each rank's rows.
        const torch::Tensor local = s.rows.empty() ? s.default_value : torch::cat(s.rows);
        const torch::Tensor length = torch::full({1}, local.size(0), local.options().dtype(torch::kLong));
        const torch::Tensor lengths = runtime.all_gather(length).reshape({-1}).to(torch::kCPU);
        const int64_t longest = lengths.max().item<int64_t>();
        s.rows.clear();
        if (longest == 0) break;
        torch::Tensor padded = local;
        if (local.size(0) < longest) {
          std::vector<int64_t> shape = local.sizes().vec();
          shape[0] = longest - local.size(0);
          padded = torch::cat({local, torch::zeros(shape, local.options())});
        }
        const torch::Tensor gathered = runtime.all_gather(padded.contiguous());
        std::vector<torch::Tensor> parts;
        for (int64_t r = 0; r < world; ++r) parts.push_back(gathered[r].narrow(0, 0, lengths[r].item<int64_t>()));
        s.rows.push_back(torch::cat(parts));
        break;
      }
    }
  }
}

torch::Tensor Metric::forward_with(const std::function<void()>& update) {
  const std::vector<State> epoch = states_;
  const int64_t count = update_count_;
  reset();
  try {
    update();
    batch_value_ = compute_value().detach();
  } catch (...) {
    states_ = epoch;
    update_count_ = count;
    throw;
  }
  const torch::Tensor value = batch_value_;
  const int64_t batch_updates = update_count_;
  for (size_t i = 0; i < states_.size(); ++i) {
    State& b = states_[i];
    const State& e = epoch[i];
    switch (b.reduction) {
      case Reduction::Sum: b.value = e.value.to(b.value.device()) + b.value; break;
      case Reduction::Max: b.value = torch::maximum(e.value.to(b.value.device()), b.value); break;
      case Reduction::Min: b.value = torch::minimum(e.value.to(b.value.device()), b.value); break;
      case Reduction::Mean:
        // A running mean over updates, as torchmetrics merges mean states.
        if (count > 0) b.value = (e.value.to(b.value.device()) * count + b.value * batch_updates) / (count + batch_updates);
        break;
      case Reduction::Cat: {
        std::vector<torch::Tensor> rows = e.rows;
        for (auto& r : rows) r = r.to(b.default_value.device());
        rows.insert(rows.end(), b.rows.begin(), b.rows.end());
        b.rows = std::move(rows);
        break;
      }
    }
  }
  update_count_ = count + batch_updates;
  computed_ = torch::Tensor();
  batch_value_ = value;
  return value;
}

void Metric::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(device, dtype, non_blocking);
  move_states(device);
}

void Metric::to(torch::Dtype dtype, bool non_blocking) { torch::nn::Module::to(dtype, non_blocking); }

void Metric::to(torch::Device device, bool non_blocking) {
  torch::nn::Module::to(device, non_blocking);
  move_states(device);
}

}  // namespace fulgur::metrics
