#pragma once

#include "lit_classifier.hpp"

#include <iostream>

namespace examples {

/// The ImageNet recipe's model options: ResNet-50, 1000 classes, SGD lr 0.1
/// with momentum 0.9, weight decay 1e-4, divided by 10 every 30 epochs. The
/// keys are LitClassifier's; only the defaults differ.
struct ImageNetClassifierOptions : LitClassifierOptions {
  ImageNetClassifierOptions() { arch("resnet50").num_classes(1000).lr(0.1).weight_decay(1e-4).lr_step_size(30); }
};

/// LitClassifier that prints, at the end of training, how many batches this
/// rank ran and the shape of its first input batch, so a run can be checked
/// for equal steps on every rank.
class ImageNetClassifier : public LitClassifier {
 public:
  using Options = ImageNetClassifierOptions;
  explicit ImageNetClassifier(const ImageNetClassifierOptions& options) : LitClassifier(options) {}

  void on_train_batch_end(const torch::Tensor& loss, const fulgur::Batch& batch, int64_t batch_idx) override {
    LitClassifier::on_train_batch_end(loss, batch, batch_idx);
    if (train_batches_++ == 0) first_input_ = batch.input.sizes().vec();
  }
  void on_train_end() override {
    LitClassifier::on_train_end();
    std::cout << "imagenet: rank " << global_rank() << " ran " << train_batches_
              << " training batches, inputs " << c10::IntArrayRef(first_input_) << std::endl;
  }

 private:
  int64_t train_batches_ = 0;
  std::vector<int64_t> first_input_;  // the shape the data pipeline gave the first batch
};

}  // namespace examples
