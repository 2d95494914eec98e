#pragma once

#include <fulgur/modules/metrics/binary_curve.hpp>
#include <fulgur/modules/metrics/metric.hpp>
#include <fulgur/modules/metrics/stat_scores.hpp>

#include <torch/torch.h>

#include <string>

namespace fulgur::metrics {

/// The base of AUROC and AveragePrecision: every score and target kept (Cat
/// states, gathered from every process in compute()), then one exact binary
/// curve per class (every distinct score a threshold, ties together) scored
/// by the subclass, torchmetrics' *AUROC / *AveragePrecision with
/// thresholds=None. Binary: preds [N, ...] probabilities (sigmoid first when
/// any is outside [0, 1]) against 0/1 targets. Multiclass: scores
/// [N, C, ...] (softmax first when any is outside [0, 1]) against classes
/// [N, ...], one-vs-rest per class. Multilabel: [N, L, ...] (sigmoid) against
/// 0/1 [N, L, ...], one curve per label. options().average(): Macro the mean
/// over classes, Weighted by each class's positives, None per class, Micro
/// (multilabel only) one curve over every label's decisions. Targets equal
/// to ignore_index count nowhere; the threshold does not apply.
class CurveMetric : public Metric {
 public:
  /// Appends the batch (no host read unless validate_args on CPU inputs).
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);
  const StatScoresOptions& options() const { return options_; }

 protected:
  CurveMetric(const std::string& name, const StatScoresOptions& options);
  torch::Tensor compute_value() override;
  /// The score of one curve (`curve.tps` empty: no sample). `one_vs_rest`:
  /// a class of a multiclass task, whose negatives are the other classes.
  virtual torch::Tensor curve_score(const BinaryCurve& curve, bool one_vs_rest) const = 0;

 private:
  StatScoresOptions options_;
};

}  // namespace fulgur::metrics
