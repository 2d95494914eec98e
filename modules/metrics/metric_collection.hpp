#pragma once

#include <fulgur/modules/metrics/metric.hpp>

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fulgur::metrics {

/// Several metrics fed the same (preds, target), torchmetrics'
/// MetricCollection: one update() updates every member, compute() returns
/// every value by name, reset() resets them all. Names carry the optional
/// prefix ("val_" + "acc" = "val_acc"), so the collection's names are the
/// names to log. Register the collection in a LightningModule with
/// register_module: its members are its child modules, so they follow
/// module.to(device) and receive the run's collectives like any metric.
/// Log every member as a metric object with LightningModule::log_dict:
///
///     log_dict(*metrics);  // each member under its full name
class MetricCollection : public torch::nn::Module {
 public:
  explicit MetricCollection(std::string prefix = "");

  /// Adds `metric` under `name` (prefix + name when the collection has a
  /// prefix) and returns it. M is any metric whose update(preds, target)
  /// and forward(preds, target) take two tensors.
  template <typename M>
  std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> metric) {
    static_assert(std::is_base_of_v<Metric, M>, "MetricCollection::add takes a Metric");
    static_assert(requires(M& m, const torch::Tensor& t) { m.update(t, t); m.forward(t, t); },
                  "MetricCollection::add: the metric needs update(preds, target) and forward(preds, target)");
    M* raw = metric.get();
    insert(name, metric, [raw](const torch::Tensor& p, const torch::Tensor& t) { raw->update(p, t); },
           [raw](const torch::Tensor& p, const torch::Tensor& t) { return raw->forward(p, t); });
    return metric;
  }

  /// Updates every member with the same inputs.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  /// update() and every member's value on this batch alone, by name.
  std::map<std::string, torch::Tensor> forward(const torch::Tensor& preds, const torch::Tensor& target);
  /// Every member's compute() by name (every process must call it together).
  std::map<std::string, torch::Tensor> compute();
  void reset();

  /// The members in the order they were added, with their full names.
  const std::vector<std::pair<std::string, std::shared_ptr<Metric>>>& items() const { return items_; }
  /// The member called `name` (full name, prefix included).
  Metric& at(const std::string& name) const;
  size_t size() const { return items_.size(); }
  const std::string& prefix() const { return prefix_; }

 private:
  using Step = std::function<void(const torch::Tensor&, const torch::Tensor&)>;
  using Forward = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;
  void insert(const std::string& name, std::shared_ptr<Metric> metric, Step update, Forward forward);

  std::string prefix_;
  std::vector<std::pair<std::string, std::shared_ptr<Metric>>> items_;
  std::vector<Step> updates_;
  std::vector<Forward> forwards_;
};

}  // namespace fulgur::metrics
