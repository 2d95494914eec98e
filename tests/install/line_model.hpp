// The consumer's model, shared by its training and its inference:
// y = out(fc(x)), a line through 8 hidden units; `fc` is one unit of the
// fully sharded strategy (its 8 rows are split over the ranks).
#pragma once

#include <fulgur/fulgur.hpp>

#define LINE_OPTIONS(X) X(double, lr, 0.1, "SGD learning rate", fulgur::check::Positive{})

struct LineOptions {
  FULGUR_OPTIONS(LineOptions, LINE_OPTIONS)
};

struct Line : fulgur::LightningModule {
  using Options = LineOptions;
  explicit Line(const LineOptions& o = {}) : lr(o.lr()) {
    save_hyperparameters(o);
    fc = register_module("fc", fulgur::ShardedUnit<torch::nn::Linear>(torch::nn::Linear(1, 8)));
    out = register_module("out", torch::nn::Linear(8, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return out->forward(fc->forward(x)); }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override { return torch::mse_loss(forward(b.input), b.target); }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(lr)), std::nullopt};
  }
  double lr;
  fulgur::ShardedUnit<torch::nn::Linear> fc{nullptr};
  torch::nn::Linear out{nullptr};
};
