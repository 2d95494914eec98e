#pragma once

#include "vision_transformer.hpp"

#include <fulgur/fulgur.hpp>

namespace examples {

/// fulgur's models and the example's vision transformer.
inline std::vector<std::string> arch_names() {
  std::vector<std::string> names = fulgur::models::model_names();
  names.push_back("vit");
  return names;
}

#define LIT_CLASSIFIER_OPTIONS(X)                                                                                       \
  X(std::string, arch, "cnn", "network: a ResNet, cnn, mlp or vit (split by heads under strategy model_parallel)",      \
    (fulgur::check::OneOf{examples::arch_names()}))                                                                    \
  X(int64_t, num_classes, 10, "classes (a weights head of another size starts fresh)", fulgur::check::AtLeast{2})       \
  X(int64_t, in_channels, 3, "channels of the input images", fulgur::check::AtLeast{1})                                 \
  X(double, lr, 0.05, "SGD learning rate", fulgur::check::Positive{})                                                   \
  X(double, momentum, 0.9, "SGD momentum", fulgur::check::AtLeast{0})                                                   \
  X(double, weight_decay, 5e-4, "SGD weight decay", fulgur::check::AtLeast{0})                                          \
  X(int64_t, lr_step_size, 0, "epochs between LR decays by lr_gamma; 0: constant LR", fulgur::check::AtLeast{0})        \
  X(double, lr_gamma, 0.1, "LR decay factor", fulgur::check::Any{})                                                     \
  X(std::string, weights, "", "state dict to start from (torchvision's or fulgur's); empty: none",                    \
    fulgur::check::FileOrEmpty{})                                                                                       \
  X(bool, channels_last, false, "ResNets: NHWC memory format", fulgur::check::Any{})                                    \
  X(bool, zero_init_residual, false, "ResNets: zero the last BatchNorm of each residual block", fulgur::check::Any{})

struct LitClassifierOptions { FULGUR_OPTIONS(LitClassifierOptions, LIT_CLASSIFIER_OPTIONS) };

/// Image classifier (SGD + momentum, optional step LR); logs <stage>_loss,
/// val/test_acc, _acc_top5 over 5 classes, and val_f1 (macro). Validation's
/// accuracy and F1 are metric objects: counts over the whole validation set
/// and every rank, divided once (a mean of batch F1s is not the F1).
class LitClassifier : public fulgur::LightningModule {
 public:
  using Options = LitClassifierOptions;
  explicit LitClassifier(const LitClassifierOptions& options);
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override { return step(b, "train"); }
  void validation_step(const fulgur::Batch& b, int64_t) override { step(b, "val"); }
  void test_step(const fulgur::Batch& b, int64_t) override { step(b, "test"); }
  torch::Tensor predict_step(const fulgur::Batch& b, int64_t) override { return net_.forward(b.input).argmax(1); }
  fulgur::OptimizerConfig configure_optimizers() override;
  /// Under strategy model_parallel: the vision transformer's plan (the others stay whole).
  void configure_model(fulgur::DeviceMesh& mesh) override {
    if (vit_) vit_->parallelize(mesh);
  }

 private:
  torch::Tensor step(const fulgur::Batch& batch, const std::string& stage);  // logs; returns the loss
  LitClassifierOptions options_;
  torch::nn::AnyModule net_;
  VisionTransformer vit_{nullptr};  // arch vit
  std::shared_ptr<fulgur::metrics::MetricCollection> val_metrics_;  // val_acc, val_f1
};

}  // namespace examples
