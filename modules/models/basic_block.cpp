#include <fulgur/modules/models/basic_block.hpp>
#include <fulgur/modules/models/resnet_layers.hpp>

namespace fulgur::models {

BasicBlockImpl::BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride) {
  conv1_ = register_module("conv1", detail::conv(in_planes, planes, 3, stride));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2_ = register_module("conv2", detail::conv(planes, planes, 3));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
  if (auto shortcut = detail::make_downsample(in_planes, planes * kExpansion, stride)) {
    downsample_ = register_module("downsample", shortcut);
  }
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = bn1_->forward(conv1_->forward(x)).relu_();
  out = bn2_->forward(conv2_->forward(out));
  out += downsample_ ? downsample_->forward(x) : x;
  return out.relu_();
}

void BasicBlockImpl::zero_init_last_bn() {
  torch::NoGradGuard no_grad;
  bn2_->weight.zero_();
}

}  // namespace fulgur::models
