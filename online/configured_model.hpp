#pragma once

#include <fulgur/modules/lightning_module.hpp>

#include <torch/script.h>
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// What a configuration file says about the model: a built-in network or a
/// TorchScript file, its loss, its optimizer and scheduler.
struct ModelSpec {
  /// "mlp" (Linear layers), "cnn" (same-size 2D convolutions: a field in,
  /// a field out) or "torchscript" (a module saved by torch.jit.save).
  std::string type = "mlp";
  /// mlp: the widths, input first ([4, 32, 2]); cnn: the channels ([1, 16, 16, 1]).
  std::vector<int64_t> layers;
  /// Between layers: "tanh", "relu" or "gelu".
  std::string activation = "tanh";
  /// cnn: odd kernel size (padding keeps the field's size).
  int64_t kernel_size = 3;
  /// mlp and cnn: the network learns a correction, out = input + net(input)
  /// (a time step of a field: input and output shaped alike).
  bool residual = false;
  /// cnn: the loss leaves out this many cells at each edge of the field
  /// (halo rows whose next values depend on cells the rank lacks, fixed
  /// boundary values).
  int64_t loss_border = 0;
  /// torchscript: the file.
  std::filesystem::path path;
  /// "mse", "l1" or "smooth_l1".
  std::string loss = "mse";
  /// "sgd", "adam" or "adamw".
  std::string optimizer = "adam";
  double lr = 1e-3;
  double momentum = 0.0;
  double weight_decay = 0.0;
  /// A StepLR every `step_size` optimizer steps (0: no scheduler).
  int64_t scheduler_step_size = 0;
  double scheduler_gamma = 0.5;
};

/// A LightningModule built from a ModelSpec: training_step is the loss of
/// forward(batch.input) against batch.target, predict_step is forward.
/// Throws std::invalid_argument naming the bad value (a missing
/// TorchScript file by its path).
class ConfiguredModel : public LightningModule {
 public:
  explicit ConfiguredModel(ModelSpec spec);
  torch::Tensor forward(const torch::Tensor& input);
  torch::Tensor training_step(const Batch& batch, int64_t batch_idx) override;
  torch::Tensor predict_step(const Batch& batch, int64_t batch_idx) override;
  OptimizerConfig configure_optimizers() override;
  const ModelSpec& spec() const { return spec_; }

 private:
  ModelSpec spec_;
  torch::nn::Sequential net_{nullptr};
  std::optional<torch::jit::Module> script_;
};

}  // namespace fulgur
