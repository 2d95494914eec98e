#pragma once

#include <torch/torch.h>

namespace fulgur::models {

/// ResNet's 1x1 -> 3x3 -> 1x1 residual block (ResNet-50/101/152), with the
/// stride on the 3x3 convolution as torchvision does ("ResNet v1.5").
/// Submodule names follow torchvision (conv1..3, bn1..3, downsample.0/1).
class BottleneckImpl : public torch::nn::Module {
 public:
  /// Output channels are planes * kExpansion.
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t in_planes, int64_t planes, int64_t stride = 1);
  torch::Tensor forward(const torch::Tensor& x);
  /// Sets bn3's scale to zero so the block starts as the identity.
  void zero_init_last_bn();

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::BatchNorm2d bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

}  // namespace fulgur::models
