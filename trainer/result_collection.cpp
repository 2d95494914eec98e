#include <fulgur/trainer/result_collection.hpp>

#include <fulgur/strategies/strategy.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
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

void ResultCollection::log(const std::string& name, const torch::Tensor& value, const LogOptions& options) {
  if (name.empty()) invalid("metric name must not be empty");
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

void ResultCollection::log(const std::string& name, metrics::Metric& metric, const LogOptions& options) {
  if (name.empty()) invalid("metric name must not be empty");
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
  if (m.options.sync_dist && strategy.world_size() > 1) {
    switch (m.options.reduce) {
      case ReduceOp::Mean:
      case ReduceOp::Sum:
        value = strategy.all_reduce(value.clone(), ReduceOp::Sum);
        weight = strategy.all_reduce(weight.clone(), ReduceOp::Sum);
        break;
      case ReduceOp::Max: value = strategy.all_reduce(value.clone(), ReduceOp::Max); break;
      case ReduceOp::Min: value = strategy.all_reduce(value.clone(), ReduceOp::Min); break;
    }
  }
  if (m.options.reduce == ReduceOp::Mean) return to_host(value / weight).item<double>();
  return to_host(value).item<double>();
}

ResultCollection::Metrics ResultCollection::epoch_metrics(Strategy& strategy) const {
  Metrics out;
  // Every process computes (and syncs) every metric in the same order, so the
  // collectives match whatever each process wants to report.
  for (const auto& [name, m] : metrics_) {
    if (m.object != nullptr) {
      if (!m.on_epoch) continue;
      const torch::Tensor value = m.object->compute();  // cached: one sync however often it is logged
      if (value.numel() != 1) {
        invalid(fmt::format("'{}' is a Metric whose value has {} elements; log only scalar metrics", name, value.numel()));
      }
      out.add(name, epoch_name(name, m), m.options, to_host(value.to(torch::kFloat64)).item<double>());
      continue;
    }
    if (!m.on_epoch || !m.accumulator.defined()) continue;
    out.add(name, epoch_name(name, m), m.options, compute_epoch(m, strategy));
  }
  // Lightning resets logged metrics at the epoch's end, after every value is read.
  for (const auto& [name, m] : metrics_) {
    if (m.object != nullptr) m.object->reset();
  }
  return out;
}

void ResultCollection::reset_step() {
  for (auto& [name, m] : metrics_) m.step_value = torch::Tensor();
}

void ResultCollection::reset() { metrics_.clear(); }

}  // namespace fulgur
