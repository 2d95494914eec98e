#pragma once

#include <torch/torch.h>

namespace fulgur::models {

/// A small convolutional classifier for small images (8x8 digits up to
/// 32x32 CINIC-10): three 3x3 conv blocks with batch norm, global average
/// pooling, one linear head. Works for any input size >= 2x2.
class SmallCNNImpl : public torch::nn::Module {
 public:
  SmallCNNImpl(int64_t in_channels, int64_t num_classes, int64_t width = 32);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Sequential features_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(SmallCNN);

}  // namespace fulgur::models
