#pragma once

#include <torch/torch.h>

namespace fulgur::models {

/// ResNet's two-convolution residual block (ResNet-18/34). Submodule names
/// follow torchvision (conv1, bn1, conv2, bn2, downsample.0, downsample.1),
/// so a torchvision state dict maps onto it key for key. `downsample` (1x1
/// conv + batch norm) exists only when the block changes stride or width.
class BasicBlockImpl : public torch::nn::Module {
 public:
  /// Output channels are planes * kExpansion.
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride = 1);
  torch::Tensor forward(const torch::Tensor& x);
  /// Sets bn2's scale to zero so the block starts as the identity (the
  /// "zero-init residual" recipe).
  void zero_init_last_bn();

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

}  // namespace fulgur::models
