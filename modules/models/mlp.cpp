#include <fulgur/modules/models/mlp.hpp>

namespace fulgur::models {

namespace {
constexpr int64_t kView = 8;  // side of the pooled view the first layer sees
}

MLPImpl::MLPImpl(int64_t in_channels, int64_t num_classes, int64_t hidden) {
  layers_ = register_module(
      "layers",
      torch::nn::Sequential(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(kView)),
                            torch::nn::Flatten(), torch::nn::Linear(in_channels * kView * kView, hidden),
                            torch::nn::ReLU(), torch::nn::Linear(hidden, hidden), torch::nn::ReLU(),
                            torch::nn::Linear(hidden, num_classes)));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) { return layers_->forward(x); }

}  // namespace fulgur::models
