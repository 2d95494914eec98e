#pragma once

// A GAN with manual optimization, as in Lightning's docs: two optimizers
// from configure_optimizers, automatic_optimization(false), and in
// training_step one discriminator step and one generator step, each with
// toggle_optimizer, manual_backward and step. Validation measures sample
// quality with a Metric (ModeQuality) whose states are summed over every
// rank: how many of the 8 modes the generator covers and the share of its
// samples near a mode.
#include "mode_quality.hpp"
#include "ring_data.hpp"

#include <fulgur/fulgur.hpp>

namespace examples {

#define GAN_OPTIONS(X)                                                                    \
  X(int64_t, latent_dim, 8, "generator noise dimension", fulgur::check::AtLeast{1})        \
  X(int64_t, hidden, 128, "hidden units of both networks", fulgur::check::AtLeast{1})       \
  X(double, lr_g, 2e-3, "generator Adam learning rate", fulgur::check::Positive{})         \
  X(double, lr_d, 2e-3, "discriminator Adam learning rate", fulgur::check::Positive{})     \
  X(double, lr_decay, 0.98, "generator learning rate factor per epoch", fulgur::check::Positive{})
struct GANOptions {
  FULGUR_OPTIONS(GANOptions, GAN_OPTIONS)
};

// One statement per layer: C++ evaluates a call's arguments in no fixed
// order (GCC last to first, Clang first to last), so layers built as
// Sequential's arguments draw their initial weights in a compiler's order.
inline torch::nn::Sequential mlp(int64_t in, int64_t hidden, int64_t out) {
  const auto leaky = torch::nn::LeakyReLUOptions().negative_slope(0.2);
  torch::nn::Sequential net;
  net->push_back(torch::nn::Linear(in, hidden));
  net->push_back(torch::nn::LeakyReLU(leaky));
  net->push_back(torch::nn::Linear(hidden, hidden));
  net->push_back(torch::nn::LeakyReLU(leaky));
  net->push_back(torch::nn::Linear(hidden, out));
  return net;
}

class GAN : public fulgur::LightningModule {
 public:
  explicit GAN(GANOptions options = {}) : options_(options) {
    options_.validate();
    automatic_optimization(false);
    save_hyperparameters(options_);
    generator = register_module("generator", mlp(options_.latent_dim(), options_.hidden(), 2));
    discriminator = register_module("discriminator", mlp(2, options_.hidden(), 1));
    quality_ = register_module("quality", std::make_shared<ModeQuality>());
  }

  torch::Tensor training_step(const fulgur::Batch& batch, int64_t batch_idx) override {
    namespace F = torch::nn::functional;
    auto optimizers = this->optimizers();
    auto& opt_g = optimizers[0];
    auto& opt_d = optimizers[1];
    const torch::Tensor& real = batch.input;
    const torch::Tensor& z = batch["z"];
    const auto ones = torch::ones({real.size(0), 1}, real.options());
    const auto zeros = torch::zeros({real.size(0), 1}, real.options());

    // Discriminator: real points are 1, generated ones 0.
    toggle_optimizer(*opt_d);
    const torch::Tensor fake = generator->forward(z).detach();
    const torch::Tensor d_loss = F::binary_cross_entropy_with_logits(discriminator->forward(real), ones) +
                                 F::binary_cross_entropy_with_logits(discriminator->forward(fake), zeros);
    opt_d->zero_grad();
    manual_backward(d_loss);
    opt_d->step();
    untoggle_optimizer(*opt_d);

    // Generator: make the discriminator say 1.
    toggle_optimizer(*opt_g);
    const torch::Tensor g_loss = F::binary_cross_entropy_with_logits(discriminator->forward(generator->forward(z)), ones);
    opt_g->zero_grad();
    manual_backward(g_loss);
    opt_g->step();
    untoggle_optimizer(*opt_g);

    // Manual optimization steps its schedulers itself: here once per full epoch.
    if (batch_idx + 1 == trainer()->state().num_training_batches()) lr_schedulers()[0]->step();

    log("d_loss", d_loss.detach(), {.prog_bar = true});
    log("g_loss", g_loss.detach(), {.prog_bar = true});
    return g_loss.detach();
  }

  void on_validation_epoch_start() override { quality_->reset(); }
  void validation_step(const fulgur::Batch& batch, int64_t) override { quality_->update(generator->forward(batch["z"])); }
  void on_validation_epoch_end() override {
    // Two numbers from one metric: compute() sums the counts over every
    // rank (the same numbers as one process), then the plain values are logged.
    const torch::Tensor value = quality_->compute();
    log("val_modes", value[0].to(torch::kFloat), {.prog_bar = true});
    log("val_quality", value[1]);
    quality_->reset();
  }

  fulgur::OptimizerConfig configure_optimizers() override {
    auto adam = [](torch::nn::Module& net, double lr) {
      return std::make_shared<torch::optim::Adam>(net.parameters(), torch::optim::AdamOptions(lr).betas({0.5, 0.999}));
    };
    auto opt_g = adam(*generator, options_.lr_g());
    auto decay_g = std::make_shared<torch::optim::StepLR>(*opt_g, 1, options_.lr_decay());
    return fulgur::OptimizerConfig::list(
        {{opt_g, fulgur::LRSchedulerConfig{decay_g}}, {adam(*discriminator, options_.lr_d()), std::nullopt}});
  }

  torch::nn::Sequential generator{nullptr};
  torch::nn::Sequential discriminator{nullptr};

 private:
  GANOptions options_;
  std::shared_ptr<ModeQuality> quality_;
};

}  // namespace examples
