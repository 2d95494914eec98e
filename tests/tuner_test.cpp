// Tuner::lr_find on the digits: the range test's curve, its suggestion, and a
// short fit with the suggested learning rate that reaches a good accuracy;
// the module is left as it was found.
#include "support/test_support.hpp"

#include <fulgur/callbacks/tuner.hpp>
#include <fulgur/datamodules/cinic10.hpp>
#include <fulgur/modules/metrics/accuracy.hpp>
#include <fulgur/modules/models/mlp.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

namespace {

/// An MLP on the digits with plain SGD at `lr`.
class DigitsMLP : public LightningModule {
 public:
  explicit DigitsMLP(double lr) : lr(lr) { net = register_module("net", models::MLP(3, 10, 64)); }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    const torch::Tensor loss = torch::cross_entropy_loss(net->forward(batch.input), batch.target);
    log("train_loss", loss);
    return loss;
  }
  void validation_step(const Batch& batch, int64_t) override {
    const torch::Tensor logits = net->forward(batch.input);
    log("val_loss", torch::cross_entropy_loss(logits, batch.target));
    log("val_acc", accuracy(logits, batch.target));
  }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(lr)), std::nullopt};
  }
  models::MLP net{nullptr};
  double lr;
};

std::shared_ptr<CINIC10> digits() {
  const std::string root = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
  REQUIRE_MESSAGE(std::filesystem::exists(root + "/train"), "demo data missing: run scripts/setup.sh");
  return std::make_shared<CINIC10>(CINIC10Options().root(root).batch_size(32).num_workers(0).seed(0));
}

}  // namespace

TEST_CASE("lr_find on the digits: a suggestion with which a short fit reaches a good accuracy") {
  TempDir dir("tuner");
  const auto options = TrainerOptions()
                           .default_root_dir(dir.path().string())
                           .accelerator("cpu")
                           .enable_progress_bar(false)
                           .logger(false)
                           .enable_checkpointing(false);
  torch::manual_seed(0);
  DigitsMLP model(1e-3);
  auto data = digits();
  std::vector<torch::Tensor> before;
  for (const auto& p : model.parameters()) before.push_back(p.detach().clone());

  auto finder = Tuner(options).lr_find(model, *data, LRFinderOptions().min_lr(1e-5).max_lr(10).num_training_steps(100));
  // The sweep: exponential from min_lr, one point per step, stopped once the loss diverged.
  REQUIRE(finder->lrs().size() >= 20);
  CHECK(finder->lrs().size() < 100);  // lr 10 with plain SGD diverges before the end
  CHECK(finder->lrs()[0] == doctest::Approx(1e-5));
  CHECK(finder->lrs()[50] == doctest::Approx(1e-5 * std::pow(1e6, 0.5)));
  const auto suggestion = finder->suggestion();
  REQUIRE(suggestion);
  INFO("suggested lr " << *suggestion);
  CHECK(*suggestion > 1e-3);
  CHECK(*suggestion < 10);
  // The module is as it was.
  size_t i = 0;
  for (const auto& p : model.parameters()) CHECK(torch::equal(p, before[i++]));

  finder->write_csv(dir / "lr_find.csv");
  const std::string csv = read_file(dir / "lr_find.csv");
  CHECK(csv.rfind("lr,loss\n1e-05,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == static_cast<long>(finder->lrs().size() + 1));

  // Two epochs with the suggestion reach a good accuracy; the starting lr (1e-3) does not.
  auto fit_with = [&](double lr) {
    torch::manual_seed(0);
    DigitsMLP fresh(lr);
    auto fresh_data = digits();
    Trainer trainer(TrainerOptions(options).max_epochs(2).num_sanity_val_steps(0));
    trainer.fit(fresh, *fresh_data);
    return trainer.callback_metrics().at("val_acc");
  };
  const double tuned = fit_with(*suggestion);
  const double untuned = fit_with(1e-3);
  INFO("val_acc with the suggestion " << tuned << ", with 1e-3 " << untuned);
  CHECK(tuned > 0.9);
  CHECK(untuned < tuned);
}

TEST_CASE("LRFinder: the sweep's learning rates and its option checks") {
  LRFinder linear(LRFinderOptions().min_lr(0.1).max_lr(1.1).num_training_steps(10).mode("linear"));
  CHECK(linear.learning_rate(0) == doctest::Approx(0.1));
  CHECK(linear.learning_rate(5) == doctest::Approx(0.6));
  LRFinder exponential(LRFinderOptions().min_lr(1e-4).max_lr(1).num_training_steps(4));
  CHECK(exponential.learning_rate(2) == doctest::Approx(1e-2));
  CHECK_FALSE(exponential.suggestion());  // no points yet
  CHECK_THROWS_WITH_AS(LRFinder(LRFinderOptions().min_lr(1).max_lr(0.5)), "[LRFinder] max_lr (0.5) must be > min_lr (1)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LRFinder(LRFinderOptions().mode("cyclic")), doctest::Contains("mode must be one of"),
                       std::invalid_argument);
}

TEST_CASE("lr_find subcommand: the example binary prints the suggestion and writes the curve") {
  const std::string root = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
  REQUIRE_MESSAGE(std::filesystem::exists(root + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("tuner-cli");
  const auto result = fulgur::testing::run_command(
      std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 lr_find --config " + FULGUR_SOURCE_DIR +
          "/examples/cinic10/digits.yaml --data.root " + root + " --data.num_workers 0 --trainer.default_root_dir " +
          dir.path().string() + " --lr_find.num_training_steps 40 --lr_find.min_lr 1e-4",
      300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("lr_find: ") != std::string::npos);
  CHECK(result.output.find("suggested lr: ") != std::string::npos);
  const std::string csv = read_file(dir / "lr_find.csv");
  CHECK(csv.rfind("lr,loss\n0.0001,", 0) == 0);
  // Nothing else: no run folder, no checkpoint.
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 1);

  const auto bad = fulgur::testing::run_command(std::string(FULGUR_BINARY_DIR) +
                                                    "/bin/cinic10 lr_find --data.root x --lr_find.mode cyclic",
                                                60);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output == "error: lr_find.mode: must be one of exponential, linear, got cyclic\n");
}
