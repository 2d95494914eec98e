#pragma once

#include <torch/arg.h>

#include <cstdint>
#include <vector>

namespace fulgur::models {

/// Which residual block a ResNet stacks.
enum class ResNetBlock { Basic, Bottleneck };

/// Shape and recipe of a ResNet. `layers` holds the block count of each of
/// the four stages (ResNet-18: {2, 2, 2, 2}). The ImageNet stem is a 7x7
/// stride-2 convolution + 3x3 max-pool; the CIFAR stem (small images such
/// as CINIC-10's 32x32) is a 3x3 stride-1 convolution and no max-pool. The
/// parameter names are the same for both stems; only conv1's kernel differs.
struct ResNetOptions {
  ResNetOptions(ResNetBlock block, std::vector<int64_t> layers) : block_(block), layers_(std::move(layers)) {}

  TORCH_ARG(ResNetBlock, block);
  TORCH_ARG(std::vector<int64_t>, layers);
  TORCH_ARG(int64_t, num_classes) = 1000;
  TORCH_ARG(int64_t, in_channels) = 3;
  /// 3x3 stride-1 stem without max-pool, for 32x32-class images.
  TORCH_ARG(bool, cifar_stem) = false;
  /// Zero the scale of the last batch norm in every block, so each residual
  /// branch starts at zero and the block as the identity.
  TORCH_ARG(bool, zero_init_residual) = false;
  /// Keep 4-d weights and activations in NHWC (channels-last) layout, which
  /// is faster for convolutions on many backends. Results are unchanged.
  TORCH_ARG(bool, channels_last) = false;
};

}  // namespace fulgur::models
