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
/// (in the targets or the predictions; top_k > 1: in the targets);
/// Weighted the mean weighted by each class's support (tp + fn); None
/// one value per class.
enum class Average { Micro, Macro, Weighted, None };

/// Binary (one score or label per element), multiclass (one class per
/// sample), or multilabel (a 0/1 decision per label, several per sample).
enum class Task { Binary, Multiclass, Multilabel };

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
  /// Multilabel over `num_labels` labels (torchmetrics' Multilabel*):
  /// predictions [N, L, ...] probabilities (logits when any is outside
  /// [0, 1]) or 0/1 labels, targets [N, L, ...] of 0/1; each label is a
  /// binary decision, positive above `threshold`. Macro averages over every
  /// label, present or not, as torchmetrics does for multilabel inputs.
  static StatScoresOptions multilabel(int64_t num_labels, double threshold = 0.5) {
    StatScoresOptions o(num_labels);
    o.task_ = Task::Multilabel;
    o.threshold_ = threshold;
    return o;
  }
  /// Classes (multiclass) or labels (multilabel); 2 for binary.
  TORCH_ARG(int64_t, num_classes);
  TORCH_ARG(Task, task) = Task::Multiclass;
  TORCH_ARG(double, threshold) = 0.5;
  TORCH_ARG(Average, average) = Average::Macro;
  /// Targets equal to it count nowhere.
  TORCH_ARG(std::optional<int64_t>, ignore_index) = std::nullopt;
  /// Accuracy only: a hit when the target is among the k highest scores.
  TORCH_ARG(int64_t, top_k) = 1;
  /// Range checks of CPU targets and predicted labels in update() (a host
  /// read per batch; torchmetrics' validate_args). false: the hot path is
  /// the counting alone, and a bad target is the caller's bug.
  TORCH_ARG(bool, validate_args) = true;
};

/// The base of the classification metrics: a confusion matrix (rows:
/// target, columns: prediction) summed over batches and processes, built
/// with device operations (no host read, no boolean indexing), and
/// per-class hits among the top k when top_k > 1. Predictions are labels
/// shaped like the target, or scores with the classes in dimension 1
/// ([N, C, ...] against [N, ...]). Multilabel keeps one 2 x 2 matrix per
/// label ([L, 2, 2]: [[tn, fp], [fn, tp]], torchmetrics'
/// MultilabelConfusionMatrix). Targets are checked against the class range
/// only when they live on the CPU (a check on the GPU would wait for it).
class StatScores : public Metric {
 public:
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);
  const StatScoresOptions& options() const { return options_; }

 protected:
  StatScores(const std::string& name, const StatScoresOptions& options, bool allows_top_k = false);

  struct Counts {
    torch::Tensor tp, fp, fn, tn;  // float64; per class or label, or scalars for Task::Binary
  };
  Counts counts();
  /// score(tp, fp, fn, tn) averaged as options().average() says.
  torch::Tensor reduce(const std::function<torch::Tensor(const Counts&)>& score);
  /// The mean of `score` weighted by `weights` (0 where they sum to 0).
  static torch::Tensor weighted_mean(const torch::Tensor& score, const torch::Tensor& weights);

  StatScoresOptions options_;

 private:
  void update_multilabel(const torch::Tensor& preds, const torch::Tensor& target);
};

}  // namespace fulgur::metrics
