// Several validation and test loaders (DataModule::val_dataloaders): each
// runs in turn, its steps get dataloader_idx, and what they log is named
// "<name>/dataloader_idx_<i>"; a plateau scheduler and EarlyStopping watch one
// of them, and a resumed fit steps the scheduler where a whole one would.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <iostream>
#include <sstream>

namespace several_dataloaders_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

/// Two evaluation sets: RegressionData's own and one with twice its targets.
struct TwoSets : RegressionData {
  TwoSets() : RegressionData(2, 2) {
    std::vector<Batch> doubled;
    auto batches = RegressionData::val_dataloader()->iterate(0);
    while (auto batch = batches->next()) doubled.push_back({batch->input, batch->target * 2.0});
    noisy = std::make_shared<TensorBatchLoader>(std::move(doubled));
  }
  std::vector<std::shared_ptr<DataLoader>> val_dataloaders() override { return {val_dataloader(), noisy}; }
  std::vector<std::shared_ptr<DataLoader>> test_dataloaders() override { return {noisy, test_dataloader()}; }
  std::vector<std::shared_ptr<DataLoader>> predict_dataloaders() override { return {noisy, val_dataloader()}; }
  std::shared_ptr<DataLoader> noisy;
};

/// Records which loader each step saw; the plateau scheduler watches the clean set's loss.
struct TwoSetModule : testing::RecordingModule {
  StepOutput validation_step(const Batch& batch, int64_t, int64_t dataloader_idx) override {
    seen.push_back(dataloader_idx);
    log("val_loss", torch::mse_loss(linear->forward(batch.input).squeeze(1), batch.target));
    return {};
  }
  StepOutput test_step(const Batch& batch, int64_t, int64_t dataloader_idx) override {
    seen.push_back(10 + dataloader_idx);
    log("test_loss", torch::mse_loss(linear->forward(batch.input).squeeze(1), batch.target));
    return {};
  }
  OptimizerConfig configure_optimizers() override {
    auto sgd = std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.05));
    auto plateau = std::make_shared<torch::optim::ReduceLROnPlateauScheduler>(
        *sgd, torch::optim::ReduceLROnPlateauScheduler::min, 0.5, 0);
    return {sgd, LRSchedulerConfig{.plateau = plateau, .monitor = "val_loss/dataloader_idx_0"}};
  }
  std::vector<int64_t> seen;
};

double mse_over(torch::nn::Linear linear, DataLoader& loader) {
  torch::NoGradGuard no_grad;
  double sum = 0.0;
  int64_t n = 0;
  auto batches = loader.iterate(0);
  while (auto batch = batches->next()) {
    sum += torch::mse_loss(linear->forward(batch->input).squeeze(1), batch->target).item<double>() * batch->size();
    n += batch->size();
  }
  return sum / static_cast<double>(n);
}

}  // namespace

TEST_CASE("several dataloaders: each loader's steps get its index and its names /dataloader_idx_N") {
  TempDir dir("several-dataloaders");
  TwoSets data;
  TwoSetModule model;
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false).enable_checkpointing(false)
                      .num_sanity_val_steps(0));
  const auto validated = trainer.validate(model, data);
  CHECK(model.seen == std::vector<int64_t>{0, 0, 1, 1});
  REQUIRE(validated.count("val_loss/dataloader_idx_0") == 1);
  REQUIRE(validated.count("val_loss/dataloader_idx_1") == 1);
  CHECK(validated.count("val_loss") == 0);
  CHECK(validated.at("val_loss/dataloader_idx_0") == doctest::Approx(mse_over(model.linear, *data.val_dataloader())));
  CHECK(validated.at("val_loss/dataloader_idx_1") == doctest::Approx(mse_over(model.linear, *data.noisy)));

  model.seen.clear();
  const auto tested = trainer.test(model, data);
  CHECK(model.seen == std::vector<int64_t>{10, 10, 11, 11});
  CHECK(tested.at("test_loss/dataloader_idx_0") == doctest::Approx(mse_over(model.linear, *data.noisy)));
  CHECK(tested.at("test_loss/dataloader_idx_1") == doctest::Approx(mse_over(model.linear, *data.val_dataloader())));

  // predict: the first loader's batches first; predict_step gets each one's index.
  struct Predicting : TwoSetModule {
    torch::Tensor predict_step(const Batch& batch, int64_t, int64_t dataloader_idx) override {
      seen.push_back(20 + dataloader_idx);
      return linear->forward(batch.input);
    }
  } predicting;
  const auto predictions = trainer.predict(predicting, data);
  CHECK(predicting.seen == std::vector<int64_t>{20, 20, 21, 21});
  REQUIRE(predictions.size() == 4);
  auto clean = data.val_dataloader()->iterate(0);
  CHECK(torch::allclose(predictions[2], predicting.linear->forward(clean->next()->input)));
}

TEST_CASE("several dataloaders: ReduceLROnPlateau and EarlyStopping watch one loader's metric; a resume is exact") {
  TempDir dir("several-dataloaders-fit");
  const auto callbacks = [] {
    return std::vector<std::shared_ptr<Callback>>{std::make_shared<EarlyStopping>(
        EarlyStoppingOptions("val_loss/dataloader_idx_1").patience(100))};
  };
  auto lr = [](Trainer& trainer) { return trainer.optimizers().front().optimizer->param_groups()[0].options().get_lr(); };
  TwoSets data;
  torch::manual_seed(7);  // the same initial weights for both runs
  TwoSetModule whole;
  double whole_lr = 0.0;
  {
    Trainer trainer(quiet_options(dir.path()).max_epochs(6).logger(false).enable_checkpointing(false), callbacks());
    trainer.fit(whole, data);
    whole_lr = lr(trainer);
    CHECK(trainer.state().callback_metrics().count("val_loss/dataloader_idx_1") == 1);
  }
  torch::manual_seed(7);
  TwoSetModule first;
  {
    Trainer trainer(quiet_options(dir.path()).max_epochs(3).logger(false).enable_checkpointing(false), callbacks());
    trainer.fit(first, data);
    trainer.save_checkpoint(dir / "three.ckpt");
  }
  TwoSetModule resumed;
  Trainer trainer(quiet_options(dir.path()).max_epochs(6).logger(false).enable_checkpointing(false), callbacks());
  trainer.fit(resumed, data, (dir / "three.ckpt").string());
  CHECK(lr(trainer) == doctest::Approx(whole_lr));
  CHECK(torch::allclose(resumed.linear->weight, whole.linear->weight));
}

namespace {

/// The message of the std::runtime_error fit throws ("" when it does not throw).
std::string fit_error(Trainer& trainer, LightningModule& model, DataModule& data) {
  try {
    trainer.fit(model, data);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("clean failures: a LibTorch error in a step names the stage, step, batch, epoch and rank") {
  TempDir dir("clean-failure");
  // Float targets given to cross_entropy as class indices.
  struct FloatTargets : testing::RecordingModule {
    torch::Tensor training_step(const Batch& batch, int64_t) override {
      return torch::nn::functional::cross_entropy(linear->forward(batch.input).repeat({1, 3}), batch.target);
    }
  } model;
  RegressionData data(2, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false).enable_checkpointing(false));
  const std::string what = fit_error(trainer, model, data);
  CHECK(what.rfind("[Trainer::fit] rank 0: training_step at batch 0 of epoch 0 failed: ", 0) == 0);
  CHECK(what.find("Exception raised from") == std::string::npos);  // no backtrace

  // run_guarded turns it into one line and exit code 1, as the command line does.
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  const int code = cli::run_guarded([&] {
    trainer.fit(model, data);
    return 0;
  });
  std::cerr.rdbuf(old);
  const std::string printed = err.str();
  CHECK(code == 1);
  CHECK(printed.rfind("error: [Trainer::fit] rank 0: training_step at batch 0 of epoch 0 failed: ", 0) == 0);
  CHECK(std::count(printed.begin(), printed.end(), '\n') == 1);
}

TEST_CASE("clean failures: a validation_step failing in the sanity check says so, not 'epoch 0'") {
  TempDir dir("clean-failure-sanity");
  struct FloatTargets : testing::RecordingModule {
    void validation_step(const Batch& batch, int64_t) override {
      torch::nn::functional::cross_entropy(linear->forward(batch.input).repeat({1, 3}), batch.target);
    }
  } model;
  RegressionData data(2, 2);
  Trainer trainer(
      quiet_options(dir.path()).max_epochs(1).num_sanity_val_steps(2).logger(false).enable_checkpointing(false));
  CHECK(fit_error(trainer, model, data)
            .rfind("[Trainer::fit] rank 0: validation_step at batch 0 of the sanity check (num_sanity_val_steps, "
                   "before training) failed: ",
                   0) == 0);
  CHECK_FALSE(trainer.state().sanity_checking());  // the failed check does not stay "running"
  CHECK(model.count("training_step") == 0);
}

TEST_CASE("several dataloaders: from the command line on 2 processes, each loader sharded and synced as one") {
  TempDir dir("several-dataloaders-cli");
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/ddp_probe";
  const std::string common = " --seed_everything 3 --trainer.accelerator cpu --trainer.process_group_timeout 30"
                             " --trainer.enable_progress_bar false --trainer.default_root_dir " +
                             dir.path().string() + " --data.samples 30 --data.batch_size 4 --data.second_val true";
  auto line = [](const std::string& output, const std::string& title) {
    const size_t start = output.find(title + ":");
    return start == std::string::npos ? std::string() : output.substr(start, output.find('\n', start) - start);
  };
  // 30 samples: 15 per rank; val_loss is synced, so two processes agree with one.
  const auto one = testing::run_command(probe + " validate --trainer.devices 1" + common, 120);
  const auto two = testing::run_command(probe + " validate --trainer.devices 2" + common, 120);
  INFO(one.output);
  INFO(two.output);
  REQUIRE(one.exit_code == 0);
  REQUIRE(two.exit_code == 0);
  CHECK(line(one.output, "validate").find("val_loss/dataloader_idx_1=") != std::string::npos);
  CHECK(line(two.output, "validate") == line(one.output, "validate"));

  // A fit whose plateau scheduler and EarlyStopping watch one loader each, from YAML.
  const auto fit = testing::run_command(
      probe + " fit --trainer.devices 2 --trainer.max_epochs 3" + common +
          " --optimizer SGD --optimizer.lr 0.1 --lr_scheduler ReduceLROnPlateau"
          " --lr_scheduler.monitor val_loss/dataloader_idx_0 --lr_scheduler.patience 0"
          " --trainer.callbacks '[{class_path: EarlyStopping, init_args: {monitor: val_loss/dataloader_idx_1,"
          " patience: 5}}, LearningRateMonitor]'",
      120);
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK(line(fit.output, "fit").find("val_acc/dataloader_idx_1=") != std::string::npos);
}

TEST_CASE("step outputs: what validation_step and test_step return reaches the callbacks' and the module's batch-end hooks") {
  TempDir dir("step-outputs");
  struct Returning : TwoSetModule {
    StepOutput validation_step(const Batch& batch, int64_t, int64_t) override {
      const torch::Tensor preds = linear->forward(batch.input).squeeze(1);
      log("val_loss", torch::mse_loss(preds, batch.target));
      return StepOutput({{"preds", preds}, {"target", batch.target}});
    }
    StepOutput test_step(const Batch& batch, int64_t, int64_t) override { return linear->forward(batch.input); }
    void on_validation_batch_end(const StepOutput& outputs, const Batch&, int64_t, int64_t dataloader_idx) override {
      module_saw.push_back(static_cast<int64_t>(outputs.named.size()) * 10 + dataloader_idx);
    }
    std::vector<int64_t> module_saw;
  } model;
  // A callback that reads outputs (Lightning's on_validation_batch_end(trainer, module, outputs, batch, ...)).
  struct Reader : Callback {
    std::string state_key() const override { return "Reader"; }
    void on_validation_batch_end(Trainer&, LightningModule&, const StepOutput& outputs, const Batch& batch, int64_t,
                                 int64_t dataloader_idx) override {
      REQUIRE(outputs.named.count("preds") == 1);
      CHECK(outputs.named.at("preds").size(0) == batch.size());
      rows += outputs.named.at("preds").size(0);
      loaders.push_back(dataloader_idx);
    }
    void on_test_batch_end(Trainer&, LightningModule&, const StepOutput& outputs, const Batch&, int64_t,
                           int64_t) override {
      CHECK(outputs.tensor.defined());
      CHECK(outputs.named.empty());
      ++test_outputs;
    }
    int64_t rows = 0, test_outputs = 0;
    std::vector<int64_t> loaders;
  };
  auto reader = std::make_shared<Reader>();
  TwoSets data;
  Trainer trainer(quiet_options(dir.path()).logger(false).enable_checkpointing(false),
                  std::vector<std::shared_ptr<Callback>>{reader});
  trainer.validate(model, data);
  trainer.test(model, data);
  CHECK(reader->rows == 4 * 8);  // 2 loaders of 2 batches of 8
  CHECK(reader->loaders == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(reader->test_outputs == 4);
  CHECK(model.module_saw == std::vector<int64_t>{20, 20, 21, 21});
}

}  // namespace several_dataloaders_test
