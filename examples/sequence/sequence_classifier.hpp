#pragma once

// Embeds the tokens, averages over the real positions (batch["mask"]) and
// classifies the average.
#include <fulgur/fulgur.hpp>

namespace examples {

class SequenceClassifier : public fulgur::LightningModule {
 public:
  /// `sgd`: plain SGD instead of Adam, a step the cuda_graph option can capture.
  SequenceClassifier(int64_t vocab, int64_t dim, double lr, bool sgd = false) : lr_(lr), sgd_(sgd) {
    embedding = register_module("embedding", torch::nn::Embedding(vocab, dim));
    head = register_module("head", torch::nn::Linear(dim, 2));
  }

  torch::Tensor forward(const fulgur::Batch& batch) {
    const torch::Tensor mask = batch["mask"].unsqueeze(-1).to(torch::kFloat);
    const torch::Tensor summed = (embedding->forward(batch.input) * mask).sum(1);
    return head->forward(summed / mask.sum(1));
  }
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t) override {
    const torch::Tensor loss = torch::cross_entropy_loss(forward(batch), batch.target);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  void validation_step(const fulgur::Batch& batch, int64_t) override {
    const torch::Tensor logits = forward(batch);
    log("val_loss", torch::cross_entropy_loss(logits, batch.target), {.sync_dist = true});
    log("val_acc", (logits.argmax(1) == batch.target).to(torch::kFloat).mean(), {.prog_bar = true, .sync_dist = true});
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    if (sgd_) return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(lr_)), std::nullopt};
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(lr_)), std::nullopt};
  }

  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear head{nullptr};

 private:
  double lr_;
  bool sgd_;
};

}  // namespace examples
