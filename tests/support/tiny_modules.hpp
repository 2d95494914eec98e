#pragma once

// Small LightningModules and DataModules the trainer tests share.

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <string>
#include <vector>

namespace fulgur::testing {

/// Halves every learning rate each time it steps, from the first step on,
/// so the number of step() calls can be read off the learning rate.
class HalvingScheduler : public torch::optim::LRScheduler {
 public:
  explicit HalvingScheduler(torch::optim::Optimizer& optimizer) : LRScheduler(optimizer) {}

 private:
  std::vector<double> get_lrs() override {
    std::vector<double> lrs = get_current_lrs();
    for (double& lr : lrs) lr *= 0.5;
    return lrs;
  }
};

/// Linear regression on fixed random batches; records every hook it sees.
class RecordingModule : public LightningModule {
 public:
  explicit RecordingModule(int64_t features = 4, double lr = 0.1) : lr_(lr) {
    linear = register_module("linear", torch::nn::Linear(features, 1));
  }

  torch::Tensor training_step(const Batch& batch, int64_t) override {
    events.emplace_back("training_step");
    const torch::Tensor loss = torch::mse_loss(linear->forward(batch.input).squeeze(1), batch.target);
    log("train_loss", loss);
    return loss;
  }
  void validation_step(const Batch& batch, int64_t) override {
    events.emplace_back("validation_step");
    log("val_loss", torch::mse_loss(linear->forward(batch.input).squeeze(1), batch.target));
  }
  void test_step(const Batch& batch, int64_t) override {
    events.emplace_back("test_step");
    log("test_loss", torch::mse_loss(linear->forward(batch.input).squeeze(1), batch.target));
  }
  torch::Tensor predict_step(const Batch& batch, int64_t) override { return linear->forward(batch.input); }

  OptimizerConfig configure_optimizers() override {
    OptimizerConfig config{std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(lr_)),
                           std::nullopt};
    if (scheduler_interval) {
      config.lr_scheduler = LRSchedulerConfig{
          std::make_shared<HalvingScheduler>(*config.optimizer), *scheduler_interval, scheduler_frequency};
    }
    return config;
  }

  void on_train_epoch_start() override { events.emplace_back("on_train_epoch_start"); }
  void on_train_epoch_end() override { events.emplace_back("on_train_epoch_end"); }
  void on_validation_start() override { events.emplace_back("on_validation_start"); }
  void on_before_optimizer_step(torch::optim::Optimizer&) override { events.emplace_back("optimizer_step"); }
  void on_fit_start() override { events.emplace_back("on_fit_start"); }
  void on_fit_end() override { events.emplace_back("on_fit_end"); }

  int64_t count(const std::string& event) const {
    return static_cast<int64_t>(std::count(events.begin(), events.end(), event));
  }

  torch::nn::Linear linear{nullptr};
  // Recorded with emplace_back: GCC 12 -O3 warns (-Wstringop-overread, a
  // false positive) when push_back moves a temporary of a long literal.
  std::vector<std::string> events;
  std::optional<Interval> scheduler_interval;
  int64_t scheduler_frequency = 1;

 private:
  double lr_;
};

/// A RecordingModule whose training step throws std::runtime_error(message)
/// once `fail_at_step` optimizer steps were taken (-1: never).
class FailingModule : public RecordingModule {
 public:
  explicit FailingModule(int64_t fail_at_step = -1, std::string message = "injected failure")
      : fail_at_step_(fail_at_step), message_(std::move(message)) {}
  torch::Tensor training_step(const Batch& batch, int64_t idx) override {
    if (trainer()->state().global_step() == fail_at_step_) throw std::runtime_error(message_);
    return RecordingModule::training_step(batch, idx);
  }

 private:
  int64_t fail_at_step_;
  std::string message_;
};

/// y = x . w + 0.5 on `train_batches` (and `val_batches`) batches of `batch_size`.
class RegressionData : public DataModule {
 public:
  RegressionData(int64_t train_batches, int64_t val_batches, int64_t batch_size = 8, int64_t features = 4) {
    torch::manual_seed(1234);
    const torch::Tensor w = torch::randn({features});
    auto make = [&](int64_t n) {
      std::vector<Batch> batches;
      for (int64_t i = 0; i < n; ++i) {
        const torch::Tensor x = torch::randn({batch_size, features});
        batches.push_back({x, x.matmul(w) + 0.5});
      }
      return std::make_shared<TensorBatchLoader>(std::move(batches));
    };
    train_ = make(train_batches);
    if (val_batches > 0) val_ = make(val_batches);
  }
  std::shared_ptr<DataLoader> train_dataloader() override { return train_; }
  std::shared_ptr<DataLoader> val_dataloader() override { return val_; }
  std::shared_ptr<DataLoader> test_dataloader() override { return val_; }
  std::shared_ptr<DataLoader> predict_dataloader() override { return val_; }

 private:
  std::shared_ptr<DataLoader> train_;
  std::shared_ptr<DataLoader> val_;
};

/// y = x . w + 0.5 on `examples` generated examples, read in order through a
/// DatasetLoader whose batch size is the option "batch_size" (what
/// Tuner::scale_batch_size changes); records the batch size of every
/// training loader it makes.
class ResizableRegressionData : public DataModule {
 public:
  ResizableRegressionData(int64_t examples, int64_t batch_size, int64_t features = 4) : batch_size_(batch_size) {
    auto generator = at::detail::createCPUGenerator(1234);
    const torch::Tensor x = torch::randn({examples, features}, generator);
    const torch::Tensor w = torch::randn({features}, generator);
    dataset_ = std::make_shared<TensorDataset>(x, x.matmul(w) + 0.5);
  }
  std::shared_ptr<DataLoader> train_dataloader() override {
    train_batch_sizes.push_back(batch_size_);
    return std::make_shared<DatasetLoader>(dataset_, DatasetLoaderOptions(batch_size_).seed(0));
  }
  int64_t* batch_arg(const std::string& name) override { return name == "batch_size" ? &batch_size_ : nullptr; }

  int64_t batch_size() const { return batch_size_; }
  const TensorDataset& dataset() const { return *dataset_; }
  std::vector<int64_t> train_batch_sizes;

 private:
  int64_t batch_size_;
  std::shared_ptr<TensorDataset> dataset_;
};

/// Options for a quiet trainer writing under `root`.
inline TrainerOptions quiet_options(const std::string& root) {
  return TrainerOptions()
      .default_root_dir(root)
      .enable_progress_bar(false)
      .enable_model_summary(false)
      .accelerator(AcceleratorKind::Cpu);
}

}  // namespace fulgur::testing
