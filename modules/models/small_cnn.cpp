#include <fulgur/modules/models/small_cnn.hpp>

namespace fulgur::models {
namespace {

torch::nn::Sequential conv_block(int64_t in, int64_t out) {
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false)),
                               torch::nn::BatchNorm2d(out), torch::nn::ReLU(torch::nn::ReLUOptions(true)));
}

}  // namespace

SmallCNNImpl::SmallCNNImpl(int64_t in_channels, int64_t num_classes, int64_t width) {
  features_ = register_module(
      "features", torch::nn::Sequential(conv_block(in_channels, width), conv_block(width, 2 * width),
                                        torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)),
                                        conv_block(2 * width, 4 * width),
                                        torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(1))));
  head_ = register_module("head", torch::nn::Linear(4 * width, num_classes));
}

torch::Tensor SmallCNNImpl::forward(const torch::Tensor& x) { return head_->forward(features_->forward(x).flatten(1)); }

}  // namespace fulgur::models
