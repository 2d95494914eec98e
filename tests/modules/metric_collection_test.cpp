// MetricCollection: one update() for several metrics on the same inputs,
// compute() as a map of prefixed names, members registered as children
// (moved with the module, given the run's collectives), and logged by a
// loop over items() or by log_dict() inside a real Trainer run.
#include "support/metrics_csv.hpp"
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <doctest/doctest.h>

namespace metric_collection_test {

namespace M = fulgur::metrics;

namespace {

struct Classifier : fulgur::LightningModule {
  Classifier() {
    net = register_module("net", torch::nn::Linear(3, 3));
    metrics = register_module("metrics", std::make_shared<M::MetricCollection>("val_"));
    metrics->add("acc", std::make_shared<M::Accuracy>(M::StatScoresOptions(3).average(M::Average::Micro)));
    metrics->add("f1", std::make_shared<M::F1Score>(M::StatScoresOptions(3)));
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    return torch::nn::functional::cross_entropy(net->forward(b.input), b.target);
  }
  void validation_step(const fulgur::Batch& b, int64_t) override {
    metrics->update(net->forward(b.input), b.target);
    for (const auto& [name, metric] : metrics->items()) log(name, *metric);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1)), std::nullopt};
  }
  torch::nn::Linear net{nullptr};
  std::shared_ptr<M::MetricCollection> metrics;
};

// Trains with the collection's forward() in every step and log_dict(), as
// Lightning's `self.log_dict(self.train_metrics)`, and keeps what each step saw.
struct Trained : fulgur::LightningModule {
  Trained() {
    net = register_module("net", torch::nn::Linear(3, 3));
    metrics = register_module("metrics", std::make_shared<M::MetricCollection>("train_"));
    metrics->add("acc", std::make_shared<M::Accuracy>(M::StatScoresOptions(3).average(M::Average::Micro)));
    metrics->add("f1", std::make_shared<M::F1Score>(M::StatScoresOptions(3)));
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor logits = net->forward(b.input);
    metrics->forward(logits.detach(), b.target);
    fulgur::LogOptions options;
    options.on_step = true;
    options.on_epoch = true;
    log_dict(*metrics, options);
    seen_logits.push_back(logits.detach());
    seen_targets.push_back(b.target);
    return torch::nn::functional::cross_entropy(logits, b.target);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1)), std::nullopt};
  }
  torch::nn::Linear net{nullptr};
  std::shared_ptr<M::MetricCollection> metrics;
  std::vector<torch::Tensor> seen_logits, seen_targets;
};

struct Data : fulgur::DataModule {
  Data(torch::Tensor x, torch::Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  void setup(fulgur::Stage) override { data_ = std::make_shared<fulgur::TensorDataset>(x_, y_); }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return val_dataloader(); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(data_, fulgur::DatasetLoaderOptions(8));
  }
  torch::Tensor x_, y_;
  std::shared_ptr<const fulgur::Dataset> data_;
};

}  // namespace

TEST_CASE("MetricCollection: one update for all, compute by name, forward, reset, errors") {
  M::MetricCollection metrics("val_");
  auto acc = metrics.add("acc", std::make_shared<M::Accuracy>(M::StatScoresOptions(3).average(M::Average::Micro)));
  metrics.add("f1", std::make_shared<M::F1Score>(M::StatScoresOptions(3)));
  metrics.add("cm", std::make_shared<M::ConfusionMatrix>(M::StatScoresOptions(3)));
  CHECK(metrics.size() == 3);
  CHECK(metrics.items()[1].first == "val_f1");  // the order added
  // Members are child modules: module.to() and LightningModule's runtime reach them.
  CHECK(metrics.named_children().contains("val_acc"));

  const torch::Tensor a_pred = torch::tensor({0, 1, 2, 2}), a_true = torch::tensor({0, 1, 1, 2});
  const torch::Tensor b_pred = torch::tensor({0, 0, 1}), b_true = torch::tensor({0, 2, 1});
  const auto batch = metrics.forward(b_pred, b_true);
  CHECK(batch.at("val_acc").item<double>() == doctest::Approx(2.0 / 3));
  metrics.update(a_pred, a_true);
  CHECK(acc->update_count() == 2);
  const auto values = metrics.compute();
  REQUIRE(values.size() == 3);
  const torch::Tensor all_pred = torch::cat({b_pred, a_pred}), all_true = torch::cat({b_true, a_true});
  CHECK(values.at("val_acc").item<double>() == doctest::Approx(5.0 / 7));
  CHECK(values.at("val_f1").item<double>() ==
        doctest::Approx(M::f1_score(all_pred, all_true, M::StatScoresOptions(3)).item<double>()).epsilon(1e-12));
  CHECK(torch::equal(values.at("val_cm"), M::confusion_matrix(all_pred, all_true, M::StatScoresOptions(3))));
  CHECK(metrics.at("val_f1").compute().item<double>() == values.at("val_f1").item<double>());

  metrics.reset();
  CHECK(acc->update_count() == 0);
  CHECK(metrics.at("val_cm").compute().sum().item<int64_t>() == 0);

  CHECK_THROWS_WITH(metrics.add("acc", std::make_shared<M::Recall>(M::StatScoresOptions(3))),
                    doctest::Contains("[MetricCollection::add] 'val_acc' is added twice"));
  CHECK_THROWS_WITH(metrics.at("acc"), doctest::Contains("[MetricCollection::at] no metric named 'acc'"));
  // A failing member names itself: the inputs reach each metric unchanged.
  CHECK_THROWS_WITH(metrics.update(torch::tensor({0, 1}), torch::tensor({0, 3})),
                    doctest::Contains("[Accuracy::update] target value 3 is outside [0, 3)"));
}

TEST_CASE("MetricCollection: logged by one loop in validation_step, epoch values over the whole set") {
  fulgur::testing::TempDir dir("metric-collection");
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({37, 3});
  const torch::Tensor y = torch::randint(3, {37});
  Classifier model;
  Data data(x, y);
  fulgur::Trainer trainer(fulgur::TrainerOptions()
                              .accelerator(fulgur::AcceleratorKind::Cpu)
                              .devices("1")
                              .default_root_dir(dir.path().string())
                              .enable_progress_bar(false)
                              .enable_model_summary(false)
                              .logger(false));
  const std::map<std::string, double> got = trainer.validate(model, data);
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = model.net->forward(x);
  }
  REQUIRE(got.count("val_acc") == 1);
  REQUIRE(got.count("val_f1") == 1);
  // Epoch values from the counts of all 37 rows (5 batches), not batch means.
  CHECK(got.at("val_acc") ==
        doctest::Approx(M::accuracy(logits, y, M::StatScoresOptions(3).average(M::Average::Micro)).item<double>()));
  CHECK(got.at("val_f1") == doctest::Approx(M::f1_score(logits, y, M::StatScoresOptions(3)).item<double>()));
  // Logged as objects: computed and reset at the epoch's end.
  CHECK(model.metrics->at("val_acc").update_count() == 0);
}

TEST_CASE("log_dict(collection): every member's step values and epoch value, under its own name") {
  fulgur::testing::TempDir dir("metric-collection-log-dict");
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({37, 3});
  const torch::Tensor y = torch::randint(3, {37});
  Trained model;
  Data data(x, y);
  fulgur::Trainer trainer(fulgur::testing::quiet_options(dir.path().string()).max_epochs(1).log_every_n_steps(1));
  trainer.fit(model, data);
  REQUIRE(model.seen_logits.size() == 5);  // 37 rows in batches of 8
  const std::string csv = fulgur::testing::read_file(trainer.log_dir() / "metrics.csv");
  const auto acc_options = M::StatScoresOptions(3).average(M::Average::Micro);
  const auto f1_options = M::StatScoresOptions(3);
  for (const auto& name_step_value :
       std::vector<std::pair<std::string, std::function<double(const torch::Tensor&, const torch::Tensor&)>>>{
           {"train_acc", [&](const torch::Tensor& p, const torch::Tensor& t) { return M::accuracy(p, t, acc_options).item<double>(); }},
           {"train_f1", [&](const torch::Tensor& p, const torch::Tensor& t) { return M::f1_score(p, t, f1_options).item<double>(); }}}) {
    const auto& name = name_step_value.first;  // not bound: clang 14 cannot capture a binding
    const auto& step_value = name_step_value.second;
    CAPTURE(name);
    // Each step: the value of that batch alone (what forward() returned).
    const auto steps = fulgur::testing::csv_series(csv, name + "_step");
    REQUIRE(steps.size() == 5);
    for (size_t i = 0; i < steps.size(); ++i) {
      CHECK(steps[i].second == doctest::Approx(step_value(model.seen_logits[i], model.seen_targets[i])).epsilon(1e-6));
    }
    // The epoch: from the counts of all 37 rows, not the mean of the steps.
    const auto epoch = fulgur::testing::csv_series(csv, name + "_epoch");
    REQUIRE(epoch.size() == 1);
    CHECK(epoch[0].second ==
          doctest::Approx(step_value(torch::cat(model.seen_logits), torch::cat(model.seen_targets))).epsilon(1e-6));
    CHECK(trainer.state().callback_metrics().at(name + "_epoch") == doctest::Approx(epoch[0].second).epsilon(1e-6));
  }
  CHECK(model.metrics->at("train_f1").update_count() == 0);  // reset at the epoch's end
}

}  // namespace metric_collection_test
