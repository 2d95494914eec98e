#pragma once

#include <fulgur/modules/metrics/metric.hpp>

#include <cstdint>
#include <optional>

namespace fulgur::metrics {

/// Average precision sum_k (R_k - R_{k-1}) P_k of a binary classifier over every distinct score, exact from every process's gathered scores: torchmetrics' BinaryAveragePrecision with thresholds=None.
class AveragePrecision : public Metric {
 public:
  /// Targets equal to `ignore_index` count nowhere.
  explicit AveragePrecision(std::optional<int64_t> ignore_index = std::nullopt);
  /// `preds`: probabilities (logits when any is outside [0, 1], as
  /// torchmetrics decides per call), `target`: 0/1, one per element.
  /// Appends both (no host read); compute() gathers every process's rows.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);

 protected:
  torch::Tensor compute_value() override;

 private:
  std::optional<int64_t> ignore_index_;
};

/// The functional form (float64, this process only).
torch::Tensor average_precision(const torch::Tensor& preds, const torch::Tensor& target,
                 std::optional<int64_t> ignore_index = std::nullopt);

}  // namespace fulgur::metrics
