// EMAWeightAveraging and StochasticWeightAveraging on real fits: the weights
// validation and the end of training see are an average computed here
// independently from the weights after every step or epoch, they differ from
// a run without averaging, and a run resumed from a mid-run checkpoint ends
// bit-identical to an uninterrupted one. SWA's BatchNorm pass: the running
// statistics at the end are those of the data under the averaged weights,
// computed here from the inputs.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/callbacks/ema_weight_averaging.hpp>
#include <fulgur/callbacks/stochastic_weight_averaging.hpp>
#include <fulgur/trainer/cli/callback_registry.hpp>

#include <doctest/doctest.h>

#include <cmath>

namespace weight_averaging_test {

using namespace fulgur;
using fulgur::testing::TempDir;

namespace {

using Weights = std::vector<torch::Tensor>;  // weight, bias of the linear layer

Weights weights_of(LightningModule& module) {
  Weights out;
  for (const auto& p : module.parameters()) out.push_back(p.detach().clone());
  return out;
}

bool all_close(const Weights& a, const Weights& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::allclose(a[i], b[i], 1e-6, 1e-7)) return false;
  }
  return true;
}

bool all_equal(const Weights& a, const Weights& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

/// Records the weights after every optimizer step and every epoch, and the
/// weights validation runs with (placed after the averaging callback, it
/// sees them swapped in), with the learning rate of each epoch.
struct Recorder : Callback {
  std::string state_key() const override { return "Recorder"; }
  void on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor&, const Batch&,
                          int64_t) override {
    if (trainer.state().global_step() > static_cast<int64_t>(after_step.size())) after_step.push_back(weights_of(module));
  }
  void on_train_epoch_start(Trainer& trainer, LightningModule&) override {
    epoch_lr.push_back(trainer.optimizers().front().optimizer->param_groups()[0].options().get_lr());
  }
  void on_train_epoch_end(Trainer&, LightningModule& module) override { after_epoch.push_back(weights_of(module)); }
  void on_validation_epoch_start(Trainer& trainer, LightningModule& module) override {
    if (!trainer.state().sanity_checking()) in_validation.push_back(weights_of(module));
  }
  std::vector<Weights> after_step, after_epoch, in_validation;
  std::vector<double> epoch_lr;
};

struct Run {
  Weights final_weights;
  std::shared_ptr<Recorder> recorder = std::make_shared<Recorder>();
};

/// Fits the regression module for `epochs` (5 steps an epoch, validation
/// after each) with `averaging` (may be null), then the Recorder.
Run fit(const std::filesystem::path& root, std::shared_ptr<Callback> averaging, int64_t epochs,
        std::vector<std::shared_ptr<Callback>> extra = {}, const std::string& ckpt_path = "") {
  torch::manual_seed(7);
  testing::RecordingModule model;
  testing::RegressionData data(5, 2);
  std::vector<std::shared_ptr<Callback>> callbacks;
  if (averaging) callbacks.push_back(averaging);
  Run run;
  callbacks.push_back(run.recorder);
  for (auto& c : extra) callbacks.push_back(c);
  Trainer trainer(testing::quiet_options(root.string()).max_epochs(epochs).num_sanity_val_steps(0).logger(false),
                  callbacks);
  trainer.fit(model, data, ckpt_path);
  run.final_weights = weights_of(model);
  return run;
}

}  // namespace

TEST_CASE("EMAWeightAveraging: validation and the end of training use the EMA of the weights after each step") {
  TempDir dir("ema");
  const Run plain = fit(dir / "plain", nullptr, 3);
  auto ema = std::make_shared<EMAWeightAveraging>(
      EMAWeightAveragingOptions().decay(0.8).update_every_n_steps(2).update_starting_at_step(1));
  const Run averaged = fit(dir / "ema", ema, 3);
  // The training itself is the same: averaging only reads the weights.
  REQUIRE(averaged.recorder->after_step.size() == 15);
  CHECK(all_equal(averaged.recorder->after_step.back(), plain.final_weights));

  // The average computed here: after steps 2, 4, 6, ... (counted from 0: step_idx % 2 == 0 and >= 1, as
  // Lightning's should_update), the first one copied.
  std::vector<Weights> expected_at_step;  // the average after each step
  Weights average;
  for (size_t step = 0; step < 15; ++step) {
    const Weights& w = averaged.recorder->after_step[step];
    if (step >= 1 && step % 2 == 0) {
      if (average.empty()) {
        for (const auto& t : w) average.push_back(t.clone());
      } else {
        for (size_t i = 0; i < w.size(); ++i) average[i] = average[i] * 0.8 + w[i] * (1 - 0.8);
      }
    }
    expected_at_step.push_back(average);
  }
  CHECK(ema->n_averaged() == 7);
  // Validation after each epoch (steps 5, 10, 15) ran with the average.
  REQUIRE(averaged.recorder->in_validation.size() == 3);
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    INFO("epoch " << epoch);
    CHECK(all_close(averaged.recorder->in_validation[epoch], expected_at_step[5 * epoch + 4]));
    CHECK_FALSE(all_close(averaged.recorder->in_validation[epoch], averaged.recorder->after_step[5 * epoch + 4]));
  }
  // And the module ends training with it (different from training without averaging).
  CHECK(all_close(averaged.final_weights, expected_at_step.back()));
  CHECK_FALSE(all_close(averaged.final_weights, plain.final_weights));
}

TEST_CASE("StochasticWeightAveraging: SWALR's annealed learning rates and the mean of the weights after each epoch") {
  TempDir dir("swa");
  auto swa = std::make_shared<StochasticWeightAveraging>(
      StochasticWeightAveragingOptions(0.02).swa_epoch_start(3).annealing_epochs(2).annealing_strategy(AnnealingStrategy::Cos));
  const Run run = fit(dir / "swa", swa, 6);
  CHECK(swa->swa_start() == 2);
  // Epochs 0 and 1 at the module's 0.1; from epoch 2 cosine from 0.1 to 0.02 over 2 epochs.
  const std::vector<double> lrs = run.recorder->epoch_lr;
  REQUIRE(lrs.size() == 6);
  CHECK(lrs[0] == doctest::Approx(0.1));
  CHECK(lrs[1] == doctest::Approx(0.1));
  CHECK(lrs[2] == doctest::Approx(0.1));
  CHECK(lrs[3] == doctest::Approx(0.02 * 0.5 + 0.1 * 0.5));  // t = 1/2: alpha = (1 - cos(pi/2)) / 2
  CHECK(lrs[4] == doctest::Approx(0.02));
  CHECK(lrs[5] == doctest::Approx(0.02));
  // Validation is not swapped (as in Lightning); the end of training is the
  // mean of the weights after epochs 2..5.
  CHECK(all_equal(run.recorder->in_validation.back(), run.recorder->after_epoch.back()));
  Weights mean;
  for (size_t i = 0; i < 2; ++i) {
    torch::Tensor sum = torch::zeros_like(run.recorder->after_epoch[2][i]);
    for (size_t epoch = 2; epoch < 6; ++epoch) sum = sum + run.recorder->after_epoch[epoch][i];
    mean.push_back(sum / 4);
  }
  CHECK(swa->n_averaged() == 4);
  CHECK(all_close(run.final_weights, mean));
  CHECK_FALSE(all_close(run.final_weights, run.recorder->after_epoch.back()));

  CHECK_THROWS_WITH_AS(StochasticWeightAveraging{StochasticWeightAveragingOptions()},
                       doctest::Contains("swa_lrs must be given"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(StochasticWeightAveraging(StochasticWeightAveragingOptions(0.1).swa_epoch_start(2.5)),
                       doctest::Contains("an integer >= 1 or a fraction in (0, 1), got 2.5"), std::invalid_argument);
}

TEST_CASE("weight averaging: a run resumed from a mid-run checkpoint ends equal to an uninterrupted run") {
  TempDir dir("averaging-resume");
  auto make_ema = [] { return std::make_shared<EMAWeightAveraging>(EMAWeightAveragingOptions().decay(0.7)); };
  auto make_swa = [] {
    return std::make_shared<StochasticWeightAveraging>(
        StochasticWeightAveragingOptions(0.03).swa_epoch_start(2).annealing_epochs(3).annealing_strategy(AnnealingStrategy::Linear));
  };
  for (const bool use_ema : {true, false}) {
    INFO((use_ema ? "EMA" : "SWA"));
    const std::string name = use_ema ? "ema" : "swa";
    auto averaging = [&]() -> std::shared_ptr<Callback> {
      if (use_ema) return make_ema();
      return make_swa();
    };
    const Run whole = fit(dir / (name + "-whole"), averaging(), 5);
    // A checkpoint at every validation end; the one of epoch 2 (of 0..4) is resumed in a fresh Trainer,
    // which runs that epoch's end (the averaging of SWA's epoch update included) and epochs 3 and 4.
    auto every_epoch = std::make_shared<ModelCheckpoint>(
        ModelCheckpointOptions().dirpath((dir / (name + "-ckpt")).string()).filename("{epoch}").save_top_k(-1));
    fit(dir / (name + "-first"), averaging(), 5, {every_epoch});
    const auto ckpt = dir / (name + "-ckpt") / "epoch=2.ckpt";
    REQUIRE(std::filesystem::exists(ckpt));
    auto resumed_averaging = averaging();
    const Run resumed = fit(dir / (name + "-resumed"), resumed_averaging, 5, {}, ckpt.string());
    CHECK(resumed.recorder->after_epoch.size() == 3);
    CHECK(resumed.recorder->after_step.size() == 10);  // the steps of epochs 3 and 4 only
    CHECK(all_equal(resumed.final_weights, whole.final_weights));
    CHECK(all_equal(resumed.recorder->in_validation.back(), whole.recorder->in_validation.back()));
  }
}

TEST_CASE("weight averaging: both are named in YAML with Lightning's options") {
  const auto registry = cli::CallbackRegistry::with_builtins();
  YAML::Node node = YAML::Load(
      "[{class_path: lightning.pytorch.callbacks.EMAWeightAveraging, init_args: {decay: 0.99}}, "
      "{class_path: StochasticWeightAveraging, init_args: {swa_lrs: [0.05], swa_epoch_start: 0.5}}]");
  const auto callbacks = registry.create(node, "trainer.callbacks");
  REQUIRE(callbacks.size() == 2);
  const auto ema = std::dynamic_pointer_cast<EMAWeightAveraging>(callbacks[0]);
  const auto swa = std::dynamic_pointer_cast<StochasticWeightAveraging>(callbacks[1]);
  REQUIRE(ema);
  REQUIRE(swa);
  CHECK(ema->options().decay() == 0.99);
  CHECK(ema->options().update_every_n_steps() == 1);
  CHECK(swa->options().swa_lrs() == std::vector<double>{0.05});
  CHECK(swa->options().annealing_strategy() == AnnealingStrategy::Cos);
  CHECK_THROWS_WITH_AS(registry.create(YAML::Load("{class_path: EMAWeightAveraging, init_args: {decay: 1.5}}"),
                                       "trainer.callbacks"),
                       "trainer.callbacks.init_args.decay: must be in [0, 1], got 1.5", cli::ConfigError);
  CHECK_THROWS_WITH_AS(registry.create(YAML::Load("StochasticWeightAveraging"), "trainer.callbacks"),
                       doctest::Contains("trainer.callbacks.init_args: [StochasticWeightAveraging] swa_lrs must be "
                                         "given"),
                       cli::ConfigError);
}

namespace {

// Linear(4, 3) -> BatchNorm1d(3) -> sum: the BatchNorm's input is the linear
// layer's output, which the test computes from the data directly.
class NormedRegression : public LightningModule {
 public:
  NormedRegression() {
    linear = register_module("linear", torch::nn::Linear(4, 3));
    norm = register_module("norm", torch::nn::BatchNorm1d(3));
  }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    return torch::mse_loss(norm->forward(linear->forward(batch.input)).sum(1), batch.target);
  }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.05)), std::nullopt};
  }
  torch::nn::Linear linear{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};

// The BatchNorm's running statistics when training ends, before any callback's on_train_end after it.
struct NormStatsAtTrainEnd : Callback {
  std::string state_key() const override { return "NormStatsAtTrainEnd"; }
  void on_train_end(Trainer&, LightningModule& module) override {
    auto& model = dynamic_cast<NormedRegression&>(module);
    mean = model.norm->running_mean.clone();
    var = model.norm->running_var.clone();
  }
  torch::Tensor mean, var;
};

}  // namespace

TEST_CASE("StochasticWeightAveraging: BatchNorm statistics are recomputed for the averaged weights") {
  TempDir dir("swa-batch-norm");
  torch::manual_seed(0);
  NormedRegression model;
  testing::ResizableRegressionData data(64, 16);  // 4 batches, in order
  auto before_swa = std::make_shared<NormStatsAtTrainEnd>();
  auto swa = std::make_shared<StochasticWeightAveraging>(
      StochasticWeightAveragingOptions(0.02).swa_epoch_start(2).annealing_epochs(1));
  Trainer(testing::quiet_options(dir.path().string()).max_epochs(4).logger(false).enable_checkpointing(false),
          {before_swa, swa})
      .fit(model, data);
  REQUIRE(swa->n_averaged() == 3);
  // The module holds the averaged parameters; buffers are not averaged.
  CHECK(torch::equal(model.linear->weight, swa->averaged().at("linear.weight")));
  CHECK(swa->averaged().count("norm.running_mean") == 0);

  // What one pass with a cumulative mean gives: the mean over the 4 batches
  // of each batch's mean and unbiased variance of the BatchNorm's input.
  torch::NoGradGuard no_grad;
  const torch::Tensor inputs = model.linear->forward(data.dataset().inputs());
  torch::Tensor mean = torch::zeros({3});
  torch::Tensor var = torch::zeros({3});
  for (int64_t b = 0; b < 4; ++b) {
    const torch::Tensor h = inputs.slice(0, 16 * b, 16 * (b + 1));
    mean += h.mean(0) / 4;
    var += h.var(0, /*unbiased=*/true) / 4;
  }
  CHECK(torch::allclose(model.norm->running_mean, mean, 1e-5, 1e-6));
  CHECK(torch::allclose(model.norm->running_var, var, 1e-5, 1e-6));
  CHECK(model.norm->num_batches_tracked.item<int64_t>() == 4);
  // They are not the statistics training left, and the momentum is back.
  CHECK_FALSE(torch::allclose(model.norm->running_mean, before_swa->mean, 1e-3, 1e-4));
  CHECK_FALSE(torch::allclose(model.norm->running_var, before_swa->var, 1e-3, 1e-4));
  CHECK(model.norm->options.momentum() == std::optional<double>(0.1));
}

TEST_CASE("StochasticWeightAveraging with BatchNorm: a run resumed from a mid-run checkpoint ends equal to an "
          "uninterrupted run") {
  TempDir dir("swa-batch-norm-resume");
  auto run = [&](const std::string& name, std::vector<std::shared_ptr<Callback>> extra, const std::string& ckpt_path) {
    torch::manual_seed(0);
    NormedRegression model;
    testing::ResizableRegressionData data(64, 16);
    std::vector<std::shared_ptr<Callback>> callbacks{std::make_shared<StochasticWeightAveraging>(
        StochasticWeightAveragingOptions(0.02).swa_epoch_start(2).annealing_epochs(1))};
    callbacks.insert(callbacks.end(), extra.begin(), extra.end());
    Trainer(testing::quiet_options((dir / name).string()).max_epochs(4).logger(false), callbacks)
        .fit(model, data, ckpt_path);
    return std::vector<torch::Tensor>{model.linear->weight.detach().clone(), model.linear->bias.detach().clone(),
                                      model.norm->running_mean.clone(), model.norm->running_var.clone()};
  };
  const auto whole = run("whole", {}, "");
  run("first", {std::make_shared<ModelCheckpoint>(
                   ModelCheckpointOptions().dirpath((dir / "ckpt").string()).filename("{epoch}").save_top_k(-1))},
      "");
  const auto ckpt = dir / "ckpt" / "epoch=1.ckpt";  // after the first SWA epoch
  REQUIRE(std::filesystem::exists(ckpt));
  const auto resumed = run("resumed", {}, ckpt.string());
  REQUIRE(resumed.size() == whole.size());
  for (size_t i = 0; i < whole.size(); ++i) CHECK(torch::equal(resumed[i], whole[i]));
}

}  // namespace weight_averaging_test
