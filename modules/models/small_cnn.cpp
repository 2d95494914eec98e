#include <fulgur/modules/models/small_cnn.hpp>

namespace fulgur::models {
namespace {

// conv 3x3 -> batch norm -> ReLU, appended to `layers`.
void add_conv_block(torch::nn::Sequential& layers, int64_t in, int64_t out) {
  layers->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false)));
  layers->push_back(torch::nn::BatchNorm2d(out));
  layers->push_back(torch::nn::ReLU(torch::nn::ReLUOptions(true)));
}

}  // namespace

SmallCNNImpl::SmallCNNImpl(int64_t in_channels, int64_t num_classes, int64_t width) {
  torch::nn::Sequential layers;
  add_conv_block(layers, in_channels, width);
  add_conv_block(layers, width, 2 * width);
  layers->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
  add_conv_block(layers, 2 * width, 4 * width);
  layers->push_back(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(1)));
  features_ = register_module("features", layers);
  head_ = register_module("head", torch::nn::Linear(4 * width, num_classes));
}

torch::Tensor SmallCNNImpl::forward(const torch::Tensor& x) { return head_->forward(features_->forward(x).flatten(1)); }

}  // namespace fulgur::models
