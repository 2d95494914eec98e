#pragma once
// The classifier the Trainer benchmarks time: cross-entropy on an MLP, SGD
// with momentum, the loss logged to the progress bar on every step.

#include <fulgur/fulgur.hpp>

namespace fulgur::bench {

struct MlpModule : fulgur::LightningModule {
  explicit MlpModule(torch::nn::Sequential layers) { net = register_module("net", layers); }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(b.input), b.target);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)),
            std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

}  // namespace fulgur::bench
