#pragma once

#include <torch/torch.h>

// Building pieces shared by BasicBlock, Bottleneck and ResNet.
namespace fulgur::models::detail {

/// A bias-free k x k convolution with "same" padding for stride 1.
inline torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

/// The shortcut of a block whose output differs in shape from its input:
/// 1x1 conv with the block's stride + batch norm (torchvision's "downsample").
/// Null when the identity fits.
inline torch::nn::Sequential make_downsample(int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return torch::nn::Sequential(nullptr);
  return torch::nn::Sequential(conv(in, out, 1, stride), torch::nn::BatchNorm2d(out));
}

}  // namespace fulgur::models::detail
