#pragma once

// A small encoder-decoder (one skip connection) that predicts a mask per
// pixel, trained with binary cross-entropy per pixel. Validation computes
// the exact IoU and Dice over every rank with metric objects
// (fulgur::metrics::JaccardIndex, Dice): their confusion counts are summed
// over the epoch's batches and reduced over the ranks before dividing. (A
// mean of per-batch IoUs would weight small batches like large ones and is
// not the IoU.)
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
    iou = register_module("iou", std::make_shared<fulgur::metrics::JaccardIndex>(fulgur::metrics::StatScoresOptions::binary()));
    dice = register_module("dice", std::make_shared<fulgur::metrics::Dice>(fulgur::metrics::StatScoresOptions::binary()));
    images = register_module("images", std::make_shared<fulgur::metrics::SumMetric>());
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

  void validation_step(const fulgur::Batch& batch, int64_t) override {
    const torch::Tensor logits = forward(batch.input);
    log("val_loss", torch::nn::functional::binary_cross_entropy_with_logits(logits, batch.target), {.sync_dist = true});
    // Probabilities, positive above 0.5; no host read per batch.
    const torch::Tensor probability = logits.sigmoid();
    iou->update(probability, batch.target);
    dice->update(probability, batch.target);
    images->update(static_cast<double>(batch.size()));
    log("val_iou", *iou, {.prog_bar = true});
    log("val_dice", *dice);
    log("val_images", *images);
  }

  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(options_.lr())), std::nullopt};
  }

  torch::nn::Conv2d enc1{nullptr}, enc2{nullptr}, dec1{nullptr}, dec2{nullptr}, head{nullptr};
  std::shared_ptr<fulgur::metrics::JaccardIndex> iou;
  std::shared_ptr<fulgur::metrics::Dice> dice;
  std::shared_ptr<fulgur::metrics::SumMetric> images;

 private:
  SegmenterOptions options_;
};

}  // namespace examples
