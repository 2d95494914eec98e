#include <fulgur/trainer/result_collection.hpp>

#include <fulgur/modules/metrics/metric.hpp>
#include <fulgur/strategies/strategy.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <limits>
#include <stdexcept>

namespace fulgur {
namespace {

std::atomic<int64_t> host_reads_{0};

// The one place logged values leave the device.
torch::Tensor to_host(const torch::Tensor& value) {
  host_reads_.fetch_add(1, std::memory_order_relaxed);
  return value.to(torch::kCPU);
}

[[noreturn]] void invalid(const std::string& message) {
  throw std::invalid_argument("[LightningModule::log] " + message);
}

}  // namespace

void ResultCollection::log(const std::string& logged_name, const torch::Tensor& value, const LogOptions& options) {
  if (logged_name.empty()) invalid("metric name must not be empty");
  const std::string name = logged_name + suffix_;
  if (!value.defined() || value.numel() != 1) {
    invalid(fmt::format("'{}' must be a scalar (one element), got shape {}", name,
                        value.defined() ? fmt::format("{}", fmt::join(value.sizes(), "x")) : "undefined"));
  }
  if (!value.is_floating_point() && !value.is_complex() && value.scalar_type() != torch::kBool &&
      !at::isIntegralType(value.scalar_type(), /*includeBool=*/false)) {
    invalid(fmt::format("'{}' has unsupported dtype {}", name, c10::toString(value.scalar_type())));
  }
  if (options.batch_size && *options.batch_size < 1) {
    invalid(fmt::format("'{}': batch_size must be >= 1, got {}", name, *options.batch_size));
  }
  const bool on_step = options.on_step.value_or(stage_ == RunningStage::Train);
  const bool on_epoch = options.on_epoch.value_or(stage_ != RunningStage::Train);
  if (!on_step && !on_epoch) invalid(fmt::format("'{}' is logged with on_step=false and on_epoch=false", name));

  Metric& m = entry(name, options, on_step, on_epoch);
  if (m.object != nullptr) invalid(fmt::format("'{}' was logged as a Metric object and as a value within one epoch", name));

  const torch::Tensor v = value.detach().reshape({}).to(torch::kFloat64);
  m.step_value = v;
  if (!on_epoch) return;
  const double weight = static_cast<double>(options.batch_size.value_or(batch_size_));
  if (!m.accumulator.defined()) {
    m.accumulator = torch::zeros({}, v.options());
    m.weight = torch::zeros({}, v.options());
    if (options.reduce == ReduceOp::Max) m.accumulator.fill_(-std::numeric_limits<double>::infinity());
    if (options.reduce == ReduceOp::Min) m.accumulator.fill_(std::numeric_limits<double>::infinity());
  }
  switch (options.reduce) {
    case ReduceOp::Mean:
      m.accumulator.add_(v * weight);
      m.weight.add_(weight);
      break;
    case ReduceOp::Sum: m.accumulator.add_(v); break;
    case ReduceOp::Max: m.accumulator = torch::maximum(m.accumulator, v); break;
    case ReduceOp::Min: m.accumulator = torch::minimum(m.accumulator, v); break;
  }
}

ResultCollection::Metric& ResultCollection::entry(const std::string& name, const LogOptions& options, bool on_step,
                                                  bool on_epoch) {
  auto [it, inserted] = metrics_.try_emplace(name);
  Metric& m = it->second;
  if (!inserted && (m.on_step != on_step || m.on_epoch != on_epoch || m.options.reduce != options.reduce)) {
    invalid(fmt::format("'{}' was logged with different on_step/on_epoch/reduce options within one epoch", name));
  }
  m.options = options;
  m.on_step = on_step;
  m.on_epoch = on_epoch;
  return m;
}

void ResultCollection::log(const std::string& logged_name, metrics::Metric& metric, const LogOptions& options) {
  if (logged_name.empty()) invalid("metric name must not be empty");
  const std::string name = logged_name + suffix_;
  const bool on_step = options.on_step.value_or(stage_ == RunningStage::Train);
  const bool on_epoch = options.on_epoch.value_or(stage_ != RunningStage::Train);
  if (!on_step && !on_epoch) invalid(fmt::format("'{}' is logged with on_step=false and on_epoch=false", name));
  const bool known = metrics_.count(name) != 0;
  Metric& m = entry(name, options, on_step, on_epoch);
  if (known && m.object != &metric) {
    invalid(fmt::format("'{}' was logged with another Metric object or a value within one epoch", name));
  }
  m.object = &metric;
  if (!on_step) return;
  const torch::Tensor& value = metric.batch_value();
  if (!value.defined()) {
    invalid(fmt::format("'{}' is a Metric logged on_step, but its forward() did not run this step "
                        "(call forward(), or log it with on_step = false)",
                        name));
  }
  if (value.numel() != 1) {
    invalid(fmt::format("'{}' is a Metric whose value has {} elements; log only scalar metrics", name, value.numel()));
  }
  m.step_value = value.detach().reshape({}).to(torch::kFloat64);
}

std::string ResultCollection::step_name(const std::string& name, const Metric& m) const {
  return m.on_epoch ? name + "_step" : name;
}

std::string ResultCollection::epoch_name(const std::string& name, const Metric& m) const {
  return m.on_step ? name + "_epoch" : name;
}

void ResultCollection::Metrics::add(const std::string& name, const std::string& key, const LogOptions& options,
                                    double value) {
  if (options.logger) logger[key] = value;
  if (options.prog_bar) prog_bar[key] = value;
  callback[name] = value;
  callback[key] = value;
}

std::vector<ResultCollection::StepValue> ResultCollection::step_values() const {
  std::vector<StepValue> out;
  for (const auto& [name, m] : metrics_) {
    if (!m.on_step || !m.step_value.defined()) continue;
    out.push_back({name, step_name(name, m), m.options, m.step_value});
  }
  return out;
}

ResultCollection::Metrics ResultCollection::read(const std::vector<StepValue>& values) {
  Metrics out;
  if (values.empty()) return out;
  std::vector<torch::Tensor> all;
  all.reserve(values.size());
  const torch::Device device = values.front().value.device();
  for (const auto& v : values) all.push_back(v.value.to(device));
  const torch::Tensor host = to_host(torch::stack(all)).contiguous();
  const double* numbers = host.data_ptr<double>();
  for (size_t i = 0; i < values.size(); ++i) out.add(values[i].name, values[i].key, values[i].options, numbers[i]);
  return out;
}

int64_t ResultCollection::host_reads() { return host_reads_.load(std::memory_order_relaxed); }

double ResultCollection::compute_epoch(const Metric& m, Strategy& strategy) const {
  torch::Tensor value = m.accumulator;
  torch::Tensor weight = m.weight;
  if (m.options.sync_dist && strategy.data_parallel_size() > 1) {
    switch (m.options.reduce) {
      case ReduceOp::Mean:
      case ReduceOp::Sum:
        value = strategy.all_reduce_data_parallel(value.clone(), ReduceOp::Sum);
        weight = strategy.all_reduce_data_parallel(weight.clone(), ReduceOp::Sum);
        break;
      case ReduceOp::Max: value = strategy.all_reduce_data_parallel(value.clone(), ReduceOp::Max); break;
      case ReduceOp::Min: value = strategy.all_reduce_data_parallel(value.clone(), ReduceOp::Min); break;
    }
  }
  if (m.options.reduce == ReduceOp::Mean) return to_host(value / weight).item<double>();
  return to_host(value).item<double>();
}

namespace {

// Fields and entries of the exchanged list: bytes no metric name holds.
constexpr char kField = '\x1f';
constexpr char kEntry = '\x1e';

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t end; (end = text.find(separator, start)) != std::string::npos; start = end + 1) {
    parts.push_back(text.substr(start, end - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}

// The path of `metric` among `module`'s descendants ("" when it is not one).
std::string path_of(const metrics::Metric& metric, const torch::nn::Module* module) {
  if (module == nullptr) return "";
  for (const auto& item : module->named_modules("", /*include_self=*/false)) {
    if (item.value().get() == &metric) return item.key();
  }
  return "";
}

metrics::Metric* metric_at(const std::string& path, const torch::nn::Module* module) {
  if (module == nullptr || path.empty()) return nullptr;
  for (const auto& item : module->named_modules("", /*include_self=*/false)) {
    if (item.key() == path) return dynamic_cast<metrics::Metric*>(item.value().get());
  }
  return nullptr;
}

}  // namespace

std::vector<ResultCollection::Logged> ResultCollection::logged_everywhere(Strategy& strategy,
                                                                          const torch::nn::Module* module) const {
  std::vector<Logged> local;
  for (const auto& [name, m] : metrics_) {
    if (!m.on_epoch || (m.object == nullptr && !m.accumulator.defined())) continue;
    local.push_back({name, epoch_name(name, m), m.options, m.object != nullptr,
                     m.object != nullptr ? path_of(*m.object, module) : ""});
  }
  if (strategy.world_size() == 1) return local;

  std::string mine;
  for (const auto& l : local) {
    mine += fmt::format("{}{}{}{}{}{}{}{}{}{}{}{}{}{}", l.name, kField, l.key, kField, int{l.options.logger}, kField,
                        int{l.options.prog_bar}, kField, static_cast<int>(l.options.reduce), kField,
                        int{l.options.sync_dist}, kField, int{l.object}, kField);
    mine += l.path;
    mine += kEntry;
  }
  std::map<std::string, std::pair<Logged, std::vector<int64_t>>> merged;  // name -> entry, ranks that logged it
  const std::vector<std::string> every = strategy.all_gather_bytes(mine);
  for (size_t rank = 0; rank < every.size(); ++rank) {
    for (const std::string& entry : split(every[rank], kEntry)) {
      if (entry.empty()) continue;
      const std::vector<std::string> f = split(entry, kField);
      Logged l{f.at(0), f.at(1), {}, f.at(6) == "1", f.at(7)};
      l.options.logger = f.at(2) == "1";
      l.options.prog_bar = f.at(3) == "1";
      l.options.reduce = static_cast<ReduceOp>(std::stoi(f.at(4)));
      l.options.sync_dist = f.at(5) == "1";
      auto [it, inserted] = merged.try_emplace(l.name, l, std::vector<int64_t>{});
      const Logged& first = it->second.first;
      if (!inserted && (first.object != l.object || first.options.sync_dist != l.options.sync_dist ||
                        first.options.reduce != l.options.reduce)) {
        invalid(fmt::format("'{}' was logged differently on rank {} and rank {} (Metric object or value, sync_dist, "
                            "reduce); log it the same way on every rank",
                            l.name, it->second.second.front(), rank));
      }
      it->second.second.push_back(static_cast<int64_t>(rank));
    }
  }
  std::vector<Logged> out;
  for (auto& [name, entry] : merged) {
    auto& [logged, ranks] = entry;
    const bool everywhere = static_cast<int64_t>(ranks.size()) == strategy.world_size();
    if (logged.object && !everywhere && logged.path.empty()) {
      invalid(fmt::format("'{}' is a Metric object that rank {} logged and another rank did not (it ran fewer "
                          "batches); register the metric in the LightningModule (register_module) so every rank "
                          "can sync it",
                          name, ranks.front()));
    }
    out.push_back(std::move(logged));
  }
  return out;
}

ResultCollection::Metrics ResultCollection::epoch_metrics(Strategy& strategy, const torch::nn::Module* module) const {
  Metrics out;
  std::vector<metrics::Metric*> computed;
  // Every process computes (and syncs) every metric any process logged, in
  // the same order, so the collectives match whatever each wants to report.
  for (const Logged& l : logged_everywhere(strategy, module)) {
    const auto it = metrics_.find(l.name);
    const Metric* mine = it != metrics_.end() ? &it->second : nullptr;
    if (l.object) {
      metrics::Metric* object = mine != nullptr ? mine->object : metric_at(l.path, module);
      if (object == nullptr) invalid(fmt::format("'{}': no Metric at '{}' in this rank's module", l.name, l.path));
      const torch::Tensor value = object->compute();  // cached: one sync however often it is logged
      if (value.numel() != 1) {
        invalid(fmt::format("'{}' is a Metric whose value has {} elements; log only scalar metrics", l.name,
                            value.numel()));
      }
      out.add(l.name, l.key, l.options, to_host(value.to(torch::kFloat64)).item<double>());
      computed.push_back(object);
    } else if (mine != nullptr) {
      out.add(l.name, l.key, l.options, compute_epoch(*mine, strategy));
    } else if (l.options.sync_dist) {
      // Nothing logged here: take part in the reduction with its identity.
      Metric none;
      none.options = l.options;
      const auto zero = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(strategy.root_device()));
      none.weight = zero;
      none.accumulator = zero.clone();
      if (l.options.reduce == ReduceOp::Max) none.accumulator.fill_(-std::numeric_limits<double>::infinity());
      if (l.options.reduce == ReduceOp::Min) none.accumulator.fill_(std::numeric_limits<double>::infinity());
      out.add(l.name, l.key, l.options, compute_epoch(none, strategy));
    }
  }
  // Lightning resets logged metrics at the epoch's end, after every value is read.
  for (const auto& [name, m] : metrics_) {
    if (m.object != nullptr) m.object->reset();
  }
  for (metrics::Metric* object : computed) object->reset();
  return out;
}

void ResultCollection::reset_step() {
  for (auto& [name, m] : metrics_) m.step_value = torch::Tensor();
}

void ResultCollection::reset() {
  metrics_.clear();
  suffix_.clear();
}

}  // namespace fulgur
