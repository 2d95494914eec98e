#include <fulgur/modules/models/basic_block.hpp>
#include <fulgur/modules/models/bottleneck.hpp>
#include <fulgur/modules/models/resnet.hpp>
#include <fulgur/modules/models/resnet_layers.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur::models {

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  if (options_.layers().size() != 4) {
    throw std::invalid_argument(
        fmt::format("[ResNet] layers must hold 4 stage depths, got {}", options_.layers().size()));
  }
  if (options_.num_classes() < 1 || options_.in_channels() < 1) {
    throw std::invalid_argument(fmt::format("[ResNet] num_classes and in_channels must be >= 1, got {} and {}",
                                            options_.num_classes(), options_.in_channels()));
  }
  conv1_ = register_module("conv1", options_.cifar_stem()
                                        ? detail::conv(options_.in_channels(), 64, 3)
                                        : torch::nn::Conv2d(torch::nn::Conv2dOptions(options_.in_channels(), 64, 7)
                                                                .stride(2)
                                                                .padding(3)
                                                                .bias(false)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1_ = register_module("layer1", make_stage(64, options_.layers()[0], 1));
  layer2_ = register_module("layer2", make_stage(128, options_.layers()[1], 2));
  layer3_ = register_module("layer3", make_stage(256, options_.layers()[2], 2));
  layer4_ = register_module("layer4", make_stage(512, options_.layers()[3], 2));
  fc_ = register_module("fc", torch::nn::Linear(in_planes_, options_.num_classes()));

  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    }
  }
  if (options_.zero_init_residual()) {
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* block = module->as<BasicBlock>()) block->zero_init_last_bn();
      if (auto* block = module->as<Bottleneck>()) block->zero_init_last_bn();
    }
  }
  if (options_.channels_last()) {
    for (auto& parameter : parameters()) {
      if (parameter.dim() == 4) parameter.set_data(parameter.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
}

torch::nn::Sequential ResNetImpl::make_stage(int64_t planes, int64_t blocks, int64_t stride) {
  torch::nn::Sequential stage;
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t block_stride = i == 0 ? stride : 1;
    if (options_.block() == ResNetBlock::Basic) {
      stage->push_back(BasicBlock(in_planes_, planes, block_stride));
      in_planes_ = planes * BasicBlockImpl::kExpansion;
    } else {
      stage->push_back(Bottleneck(in_planes_, planes, block_stride));
      in_planes_ = planes * BottleneckImpl::kExpansion;
    }
  }
  return stage;
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = options_.channels_last() ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x;
  out = bn1_->forward(conv1_->forward(out)).relu_();
  if (!options_.cifar_stem()) out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  out = layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(out))));
  out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
  return fc_->forward(out);
}

ResNetOptions resnet_options(int64_t depth) {
  switch (depth) {
    case 18: return ResNetOptions(ResNetBlock::Basic, {2, 2, 2, 2});
    case 34: return ResNetOptions(ResNetBlock::Basic, {3, 4, 6, 3});
    case 50: return ResNetOptions(ResNetBlock::Bottleneck, {3, 4, 6, 3});
    case 101: return ResNetOptions(ResNetBlock::Bottleneck, {3, 4, 23, 3});
    case 152: return ResNetOptions(ResNetBlock::Bottleneck, {3, 8, 36, 3});
    default:
      throw std::invalid_argument(
          fmt::format("[resnet_options] no ResNet of depth {} (expected 18, 34, 50, 101 or 152)", depth));
  }
}

namespace {
ResNet make_resnet(int64_t depth, int64_t num_classes, int64_t in_channels, bool cifar_stem) {
  return ResNet(resnet_options(depth).num_classes(num_classes).in_channels(in_channels).cifar_stem(cifar_stem));
}
}  // namespace

ResNet resnet18(int64_t num_classes, int64_t in_channels, bool cifar_stem) {
  return make_resnet(18, num_classes, in_channels, cifar_stem);
}
ResNet resnet34(int64_t num_classes, int64_t in_channels, bool cifar_stem) {
  return make_resnet(34, num_classes, in_channels, cifar_stem);
}
ResNet resnet50(int64_t num_classes, int64_t in_channels, bool cifar_stem) {
  return make_resnet(50, num_classes, in_channels, cifar_stem);
}
ResNet resnet101(int64_t num_classes, int64_t in_channels, bool cifar_stem) {
  return make_resnet(101, num_classes, in_channels, cifar_stem);
}
ResNet resnet152(int64_t num_classes, int64_t in_channels, bool cifar_stem) {
  return make_resnet(152, num_classes, in_channels, cifar_stem);
}

}  // namespace fulgur::models
