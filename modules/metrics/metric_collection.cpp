#include <fulgur/modules/metrics/metric_collection.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur::metrics {

MetricCollection::MetricCollection(std::string prefix) : torch::nn::Module("MetricCollection"), prefix_(std::move(prefix)) {}

void MetricCollection::insert(const std::string& name, std::shared_ptr<Metric> metric, Step update, Forward forward) {
  if (metric == nullptr) throw std::invalid_argument(fmt::format("[MetricCollection::add] metric '{}' is null", name));
  const std::string full = prefix_ + name;
  for (const auto& item : items_) {
    if (item.first == full) throw std::invalid_argument(fmt::format("[MetricCollection::add] '{}' is added twice", full));
  }
  // A child module under its full name: register_module rejects names with
  // dots, which would not be loggable names anyway.
  register_module(full, metric);
  items_.emplace_back(full, std::move(metric));
  updates_.push_back(std::move(update));
  forwards_.push_back(std::move(forward));
}

void MetricCollection::update(const torch::Tensor& preds, const torch::Tensor& target) {
  for (const auto& update : updates_) update(preds, target);
}

std::map<std::string, torch::Tensor> MetricCollection::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  std::map<std::string, torch::Tensor> values;
  for (size_t i = 0; i < items_.size(); ++i) values[items_[i].first] = forwards_[i](preds, target);
  return values;
}

std::map<std::string, torch::Tensor> MetricCollection::compute() {
  std::map<std::string, torch::Tensor> values;
  // In the order added, so every process issues the same collectives in the same order.
  for (const auto& [name, metric] : items_) values[name] = metric->compute();
  return values;
}

void MetricCollection::reset() {
  for (const auto& item : items_) item.second->reset();
}

Metric& MetricCollection::at(const std::string& name) const {
  for (const auto& [full, metric] : items_) {
    if (full == name) return *metric;
  }
  throw std::out_of_range(fmt::format("[MetricCollection::at] no metric named '{}'", name));
}

}  // namespace fulgur::metrics
