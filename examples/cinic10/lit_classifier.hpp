#pragma once

#include <fulgur/fulgur.hpp>

namespace examples {

/// An image classifier (any fulgur::models::create_model arch: ResNets,
/// small CNN, MLP) trained with SGD + momentum and an optional step LR
/// schedule; logs train_loss, val_loss, val_acc, test_acc, and the top-5
/// accuracies val_acc_top5 / test_acc_top5 when there are more than 5 classes.
/// `weights` loads a state dict (torchvision's or fulgur's) before training;
/// a classifier head of another num_classes keeps its fresh initialisation.
class LitClassifier : public fulgur::LightningModule {
 public:
  struct Options {
    std::string arch = "cnn";
    int64_t num_classes = 10;
    int64_t in_channels = 3;
    double lr = 0.05;
    double momentum = 0.9;
    double weight_decay = 5e-4;
    int64_t lr_step_size = 0;  // epochs between LR decays; 0 = constant LR
    double lr_gamma = 0.1;
    std::string weights;  // state dict file to start from; empty: random init
    bool channels_last = false;
    bool zero_init_residual = false;
  };

  explicit LitClassifier(const Options& options);
  explicit LitClassifier(fulgur::cli::ConfigSection& config);
  /// Reads the options from `config`; keys it lacks keep `defaults`.
  LitClassifier(fulgur::cli::ConfigSection& config, Options defaults);

  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t batch_idx) override;
  void validation_step(const fulgur::Batch& batch, int64_t batch_idx) override;
  void test_step(const fulgur::Batch& batch, int64_t batch_idx) override;
  torch::Tensor predict_step(const fulgur::Batch& batch, int64_t batch_idx) override;
  fulgur::OptimizerConfig configure_optimizers() override;

  static Options read_options(fulgur::cli::ConfigSection& config, Options defaults);

 private:
  Options options_;
  torch::nn::AnyModule net_;
};

}  // namespace examples
