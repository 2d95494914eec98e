#pragma once

#include <torch/torch.h>

#include <vector>

namespace fulgur {

/// torchvision's Normalize: (x - mean[c]) / std[c] per channel of a float
/// [C, H, W] image, in float32 like torchvision (mean and std are rounded
/// to float first), so results equal torchvision's bit for bit.
class Normalize {
 public:
  /// One entry per channel; std entries must be positive.
  Normalize(std::vector<double> mean, std::vector<double> std);

  torch::Tensor operator()(const torch::Tensor& image_chw) const;
  /// The formula on one value of channel c.
  float apply(size_t channel, float value) const { return (value - mean_[channel]) / std_[channel]; }
  size_t channels() const { return mean_.size(); }

 private:
  std::vector<float> mean_;
  std::vector<float> std_;
};

}  // namespace fulgur
