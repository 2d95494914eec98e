#pragma once

#include <fulgur/modules/models/resnet_options.hpp>

#include <torch/torch.h>

namespace fulgur::models {

/// A ResNet (He et al. 2015) laid out exactly like torchvision's, so that
/// state dicts move both ways: conv1, bn1, layer1..layer4 (each a
/// Sequential of BasicBlock or Bottleneck), fc. Initialisation follows
/// torchvision too: Kaiming-normal (fan_out) convolutions, unit-scale batch
/// norms, PyTorch's default Linear init.
class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(const ResNetOptions& options);
  /// [N, in_channels, H, W] -> logits [N, num_classes].
  torch::Tensor forward(const torch::Tensor& x);
  const ResNetOptions& options() const { return options_; }

 private:
  torch::nn::Sequential make_stage(int64_t planes, int64_t blocks, int64_t stride);

  ResNetOptions options_;
  int64_t in_planes_ = 64;  // channels entering the next stage while building
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr}, layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

/// torchvision's depths; `cifar_stem` picks the small-image stem.
ResNet resnet18(int64_t num_classes = 1000, int64_t in_channels = 3, bool cifar_stem = false);
ResNet resnet34(int64_t num_classes = 1000, int64_t in_channels = 3, bool cifar_stem = false);
ResNet resnet50(int64_t num_classes = 1000, int64_t in_channels = 3, bool cifar_stem = false);
ResNet resnet101(int64_t num_classes = 1000, int64_t in_channels = 3, bool cifar_stem = false);
ResNet resnet152(int64_t num_classes = 1000, int64_t in_channels = 3, bool cifar_stem = false);

/// The ResNetOptions of "resnet18".."resnet152"; throws std::invalid_argument
/// for another depth.
ResNetOptions resnet_options(int64_t depth);

}  // namespace fulgur::models
