#pragma once

#include <fulgur/fulgur.hpp>

namespace insitu {

/// A small CNN that learns one solver step: the field plus a learned
/// correction, u + stencil(u) + conv(tanh(conv(u))) (a linear 3x3 path for
/// the diffusion, a nonlinear one for the rest), on [batch, 1, rows + 2, ny]
/// fields (halo rows included, so each rank sees its neighbours' edge).
class HeatSurrogate : public fulgur::LightningModule {
 public:
  explicit HeatSurrogate(double lr = 1e-2) : lr_(lr) {
    stencil_ = register_module("stencil", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 1, 3).padding(1)));
    conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)));
    conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 1, 3).padding(1)));
    torch::NoGradGuard no_grad;  // the correction starts at zero: the first guess is "nothing changes"
    for (auto& p : stencil_->parameters()) p.zero_();
    for (auto& p : conv2_->parameters()) p.zero_();
  }
  torch::Tensor forward(const torch::Tensor& u) {
    return u + stencil_->forward(u) + conv2_->forward(torch::tanh(conv1_->forward(u)));
  }
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t) override {
    // Interior points only: the halo rows' next values depend on rows this
    // rank does not have, and the outer columns are the solver's boundary.
    auto interior = [](const torch::Tensor& t) { return t.narrow(2, 1, t.size(2) - 2).narrow(3, 1, t.size(3) - 2); };
    torch::Tensor loss = torch::mse_loss(interior(forward(batch.input)), interior(batch.target));
    log("train_loss", loss);
    return loss;
  }
  torch::Tensor predict_step(const fulgur::Batch& batch, int64_t) override { return forward(batch.input); }
  fulgur::OptimizerConfig configure_optimizers() override {
    auto adam = std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(lr_));
    // The rate falls as the fit gets close: an autoregressive rollout amplifies weight noise.
    fulgur::LRSchedulerConfig decay;
    decay.scheduler = std::make_shared<torch::optim::StepLR>(*adam, 100, 0.3);
    decay.interval = fulgur::Interval::Step;
    return {adam, decay};
  }

 private:
  double lr_;
  torch::nn::Conv2d stencil_{nullptr}, conv1_{nullptr}, conv2_{nullptr};
};

}  // namespace insitu
