#include "support/test_support.hpp"

#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <doctest/doctest.h>

namespace convergence_test {

using namespace fulgur;
using fulgur::testing::TempDir;

namespace {

/// XOR: not linearly separable, so only a trained hidden layer solves it.
struct XorModule : LightningModule {
  XorModule() {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(2, 8), torch::nn::Tanh(),
                                                       torch::nn::Linear(8, 1)));
  }
  torch::Tensor training_step(const Batch& b, int64_t) override {
    const torch::Tensor loss =
        torch::binary_cross_entropy_with_logits(net->forward(b.input).squeeze(1), b.target);
    log("train_loss", loss, {.on_epoch = true});
    return loss;
  }
  void validation_step(const Batch& b, int64_t) override {
    const torch::Tensor correct = (net->forward(b.input).squeeze(1) > 0).to(torch::kFloat32).eq(b.target);
    log("val_acc", correct.to(torch::kFloat32).mean());
  }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(0.05)), std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

struct XorData : DataModule {
  std::shared_ptr<DataLoader> loader() {
    const torch::Tensor x = torch::tensor({0.f, 0.f, 0.f, 1.f, 1.f, 0.f, 1.f, 1.f}).reshape({4, 2});
    const torch::Tensor y = torch::tensor({0.f, 1.f, 1.f, 0.f});
    return std::make_shared<TensorBatchLoader>(std::vector<Batch>{{x, y}});
  }
  std::shared_ptr<DataLoader> train_dataloader() override { return loader(); }
  std::shared_ptr<DataLoader> val_dataloader() override { return loader(); }
};

}  // namespace

TEST_CASE("convergence: XOR is learned to 100% with a falling loss") {
  TempDir dir("xor");
  seed_everything(7);
  XorModule model;
  XorData data;
  Trainer trainer(TrainerOptions()
                      .max_epochs(300)
                      .accelerator(AcceleratorKind::Cpu)
                      .enable_progress_bar(false)
                      .log_every_n_steps(1)
                      .default_root_dir(dir.path()));
  const double initial = trainer.validate(model, data).at("val_acc");
  trainer.fit(model, data);
  CHECK(initial < 1.0);
  CHECK(trainer.state().callback_metrics().at("val_acc") == doctest::Approx(1.0));
  CHECK(trainer.state().callback_metrics().at("train_loss_epoch") < 0.05);
  CHECK(trainer.state().global_step() == 300);
}

}  // namespace convergence_test
