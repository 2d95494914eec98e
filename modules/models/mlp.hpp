#pragma once

#include <torch/torch.h>

namespace fulgur::models {

/// A two-hidden-layer perceptron on an 8x8 average-pooled view of the image,
/// so the same model takes any input size.
class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(int64_t in_channels, int64_t num_classes, int64_t hidden = 256);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Sequential layers_{nullptr};
};
TORCH_MODULE(MLP);

}  // namespace fulgur::models
