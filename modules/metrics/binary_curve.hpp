#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace fulgur::metrics {

/// True and false positives at every distinct score, highest first
/// (sklearn's _binary_clf_curve): the points of the ROC and PR curves.
struct BinaryCurve {
  torch::Tensor tps;  // float64
  torch::Tensor fps;  // float64
};

/// The curve of `scores` against 0/1 `target` (samples whose target is
/// `ignore_index` left out). Reads the device (compute() only).
BinaryCurve binary_curve(const torch::Tensor& scores, const torch::Tensor& target,
                         std::optional<int64_t> ignore_index);

}  // namespace fulgur::metrics
