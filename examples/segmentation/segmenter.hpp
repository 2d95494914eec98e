#pragma once

// A small encoder-decoder (one skip connection) that predicts a mask per
// pixel, trained with binary cross-entropy per pixel. Validation computes
// the exact IoU and Dice over every rank: intersection, union and pixel
// counts are summed over the epoch's batches, reduced over the ranks in
// on_validation_epoch_end, and only then divided. (A mean of per-batch IoUs
// would weight small batches like large ones and is not the IoU.)
#include <fulgur/fulgur.hpp>

namespace examples {

#define SEGMENTER_OPTIONS(X)                                              \
  X(int64_t, width, 16, "channels of the first level", fulgur::check::AtLeast{1}) \
  X(double, lr, 3e-3, "Adam learning rate", fulgur::check::Positive{})
struct SegmenterOptions {
  FULGUR_OPTIONS(SegmenterOptions, SEGMENTER_OPTIONS)
};

class Segmenter : public fulgur::LightningModule {
 public:
  explicit Segmenter(SegmenterOptions options = {}) : options_(options) {
    options_.validate();
    save_hyperparameters(options_);
    const int64_t w = options_.width();
    auto conv = [](int64_t in, int64_t out) { return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)); };
    enc1 = register_module("enc1", conv(1, w));
    enc2 = register_module("enc2", conv(w, 2 * w));
    dec1 = register_module("dec1", conv(2 * w, w));
    dec2 = register_module("dec2", conv(2 * w, w));
    head = register_module("head", torch::nn::Conv2d(torch::nn::Conv2dOptions(w, 1, 1)));
  }

  /// Logits per pixel, [N, 1, H, W].
  torch::Tensor forward(const torch::Tensor& image) {
    namespace F = torch::nn::functional;
    const auto up = F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest);
    const torch::Tensor e1 = torch::relu(enc1->forward(image));                      // H
    const torch::Tensor e2 = torch::relu(enc2->forward(F::max_pool2d(e1, F::MaxPool2dFuncOptions(2))));  // H/2
    const torch::Tensor d1 = torch::relu(dec1->forward(F::interpolate(e2, up)));     // H
    return head->forward(torch::relu(dec2->forward(torch::cat({d1, e1}, 1))));
  }

  torch::Tensor training_step(const fulgur::Batch& batch, int64_t) override {
    const torch::Tensor loss = torch::nn::functional::binary_cross_entropy_with_logits(forward(batch.input), batch.target);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }

  void on_validation_epoch_start() override {
    counts_ = torch::zeros({4}, torch::TensorOptions().dtype(torch::kLong).device(device()));
    images_ = torch::zeros({}, counts_.options());
  }
  void validation_step(const fulgur::Batch& batch, int64_t) override {
    const torch::Tensor logits = forward(batch.input);
    log("val_loss", torch::nn::functional::binary_cross_entropy_with_logits(logits, batch.target), {.sync_dist = true});
    const torch::Tensor predicted = logits > 0;
    const torch::Tensor truth = batch.target > 0.5;
    // intersection, union, predicted pixels, true pixels: no host read per batch.
    counts_ += torch::stack({(predicted & truth).sum(), (predicted | truth).sum(), predicted.sum(), truth.sum()});
    images_ += batch.size();
  }
  void on_validation_epoch_end() override {
    const torch::Tensor c = all_reduce(counts_).to(torch::kDouble);
    log("val_iou", c[0] / c[1], {.prog_bar = true});
    log("val_dice", 2 * c[0] / (c[2] + c[3]));
    // all_gather: one row per rank (uneven shards hold different counts).
    log("val_images", all_gather(images_).sum().to(torch::kDouble));
  }

  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(options_.lr())), std::nullopt};
  }

  torch::nn::Conv2d enc1{nullptr}, enc2{nullptr}, dec1{nullptr}, dec2{nullptr}, head{nullptr};

 private:
  SegmenterOptions options_;
  torch::Tensor counts_;  // summed over the epoch's batches
  torch::Tensor images_;
};

}  // namespace examples
