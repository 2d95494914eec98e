#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace fulgur::models {

/// Recipe switches of create_model() that apply to the ResNets (ignored by
/// the small CNN and the MLP).
struct ModelOptions {
  bool channels_last = false;
  bool zero_init_residual = false;
};

/// Builds a classifier by name: "resnet18", "resnet34", "resnet50",
/// "resnet101", "resnet152" (ImageNet stem), the same with "_cifar" (3x3
/// stem, no max-pool, for small images), "cnn" (SmallCNN) or "mlp" (MLP).
/// Throws std::invalid_argument naming the unknown arch and the known ones.
torch::nn::AnyModule create_model(const std::string& arch, int64_t num_classes, int64_t in_channels = 3,
                                  const ModelOptions& options = {});

/// Name prefix of the classifier layer of `arch` ("fc." for the ResNets), the
/// part a fine-tuning run with another num_classes re-initialises.
std::string classifier_head(const std::string& arch);

/// Every name create_model() accepts.
const std::vector<std::string>& model_names();

}  // namespace fulgur::models
