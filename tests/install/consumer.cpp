// Trains a linear model for a few steps through the installed fulgur.
#include <fulgur/datamodules/tensor_batch_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <iostream>

struct Line : fulgur::LightningModule {
  Line() { fc = register_module("fc", torch::nn::Linear(1, 1)); }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    return torch::mse_loss(fc->forward(b.input), b.target);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1)), std::nullopt};
  }
  torch::nn::Linear fc{nullptr};
};

struct Points : fulgur::DataModule {
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    const torch::Tensor x = torch::linspace(-1, 1, 16).unsqueeze(1);
    return std::make_shared<fulgur::TensorBatchLoader>(std::vector<fulgur::Batch>{{x, 3 * x + 1}});
  }
};

int main() {
  Line model;
  Points data;
  fulgur::Trainer trainer(
      fulgur::TrainerOptions().max_steps(200).accelerator("cpu").logger(false).enable_progress_bar(false));
  trainer.fit(model, data);
  std::cout << "steps=" << trainer.global_step() << " w=" << model.fc->weight.item<double>() << std::endl;
  return std::abs(model.fc->weight.item<double>() - 3.0) < 0.05 ? 0 : 1;
}
