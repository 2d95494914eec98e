#pragma once

#include <fulgur/modules/metrics/metric.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fulgur::metrics {

/// How per-class scores become one value (torchmetrics' `average`): Micro
/// from counts summed over classes; Macro the mean over classes that occur
/// (in the targets or the predictions; top_k > 1: in the targets); None
/// one value per class.
enum class Average { Micro, Macro, None };

/// Binary (one score or label per element) or multiclass.
enum class Task { Binary, Multiclass };

/// The inputs of the classification metrics, with torchmetrics' names.
struct StatScoresOptions {
  /// Multiclass over `num_classes` classes.
  explicit StatScoresOptions(int64_t num_classes) : num_classes_(num_classes) {}
  /// Binary: predictions are probabilities (logits when any is outside
  /// [0, 1], decided on the device as torchmetrics does) or 0/1 labels;
  /// positive above `threshold`.
  static StatScoresOptions binary(double threshold = 0.5) {
    StatScoresOptions o(2);
    o.task_ = Task::Binary;
    o.threshold_ = threshold;
    return o;
  }
  TORCH_ARG(int64_t, num_classes);
  TORCH_ARG(Task, task) = Task::Multiclass;
  TORCH_ARG(double, threshold) = 0.5;
  TORCH_ARG(Average, average) = Average::Macro;
  /// Targets equal to it count nowhere.
  TORCH_ARG(std::optional<int64_t>, ignore_index) = std::nullopt;
  /// Accuracy only: a hit when the target is among the k highest scores.
  TORCH_ARG(int64_t, top_k) = 1;
};

/// The base of the classification metrics: a confusion matrix (rows:
/// target, columns: prediction) summed over batches and processes, built
/// with index_add on the device (no host read, no boolean indexing), and
/// per-class hits among the top k when top_k > 1. Predictions are labels
/// shaped like the target, or scores with the classes in dimension 1
/// ([N, C, ...] against [N, ...]). Targets are checked against the class
/// range only when they live on the CPU (a check on the GPU would wait for it).
class StatScores : public Metric {
 public:
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);
  const StatScoresOptions& options() const { return options_; }

 protected:
  StatScores(const std::string& name, const StatScoresOptions& options, bool allows_top_k = false);

  struct Counts {
    torch::Tensor tp, fp, fn, tn;  // float64; per class, or scalars for Task::Binary
  };
  Counts counts();
  /// score(tp, fp, fn, tn) averaged as options().average() says.
  torch::Tensor reduce(const std::function<torch::Tensor(const Counts&)>& score);
  /// Macro's mean over the classes whose `weights` are 1.
  static torch::Tensor weighted_mean(const torch::Tensor& score, const torch::Tensor& weights);

  StatScoresOptions options_;
};

}  // namespace fulgur::metrics
