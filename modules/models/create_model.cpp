#include <fulgur/modules/models/create_model.hpp>
#include <fulgur/modules/models/mlp.hpp>
#include <fulgur/modules/models/resnet.hpp>
#include <fulgur/modules/models/small_cnn.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace fulgur::models {
namespace {
const std::vector<int64_t> kResNetDepths = {18, 34, 50, 101, 152};
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const int64_t depth : kResNetDepths) all.push_back(fmt::format("resnet{}", depth));
    for (const int64_t depth : kResNetDepths) all.push_back(fmt::format("resnet{}_cifar", depth));
    all.emplace_back("cnn");
    all.emplace_back("mlp");
    return all;
  }();
  return names;
}

std::string classifier_head(const std::string& arch) {
  if (arch == "cnn") return "head.";
  if (arch == "mlp") return "layers.6.";  // the last Linear of MLP's Sequential
  return "fc.";
}

torch::nn::AnyModule create_model(const std::string& arch, int64_t num_classes, int64_t in_channels,
                                  const ModelOptions& options) {
  if (arch == "cnn") return torch::nn::AnyModule(SmallCNN(in_channels, num_classes));
  if (arch == "mlp") return torch::nn::AnyModule(MLP(in_channels, num_classes));
  for (const int64_t depth : kResNetDepths) {
    const std::string name = fmt::format("resnet{}", depth);
    if (arch == name || arch == name + "_cifar") {
      return torch::nn::AnyModule(ResNet(resnet_options(depth)
                                             .num_classes(num_classes)
                                             .in_channels(in_channels)
                                             .cifar_stem(arch != name)
                                             .channels_last(options.channels_last)
                                             .zero_init_residual(options.zero_init_residual)));
    }
  }
  throw std::invalid_argument(
      fmt::format("[create_model] unknown arch '{}' (expected one of {})", arch, fmt::join(model_names(), ", ")));
}

}  // namespace fulgur::models
