// Persistent metric states (torchmetrics' add_state(persistent=True) /
// Metric.persistent(True)): they join the module's state_dict under
// "<module path>.<state>", go into a Trainer checkpoint, and a fresh module
// restored from it holds the same states; states that are not persistent
// stay out of both.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace metric_state_dict_test {

namespace M = fulgur::metrics;
using fulgur::testing::TempDir;

namespace {

// A metric of one's own whose two states are declared persistent in
// add_state (torchmetrics' add_state(..., persistent=True)), and one that is not.
class MeanAbs : public M::Metric {
 public:
  MeanAbs() : Metric("MeanAbs") {
    add_state("total", torch::zeros({}, torch::kFloat64), M::Reduction::Sum, /*persistent=*/true);
    add_state("count", torch::zeros({}, torch::kLong), M::Reduction::Sum, /*persistent=*/true);
    add_state("largest", torch::zeros({}, torch::kFloat64), M::Reduction::Max);
  }
  void update(const torch::Tensor& values) {
    begin_update(values.device());
    state("total") = state("total") + values.abs().sum().to(torch::kFloat64);
    state("count") = state("count") + values.numel();
    state("largest") = torch::maximum(state("largest"), values.abs().max().to(torch::kFloat64));
  }

 protected:
  torch::Tensor compute_value() override { return M::safe_divide(state("total"), state("count")); }
};

// Metrics updated in training_step and never logged, so their states are
// what the epoch accumulated when the checkpoint is written.
struct Classifier : fulgur::LightningModule {
  Classifier() {
    net = register_module("net", torch::nn::Linear(3, 3));
    f1 = register_module("f1", std::make_shared<M::F1Score>(M::StatScoresOptions(3)));
    auroc = register_module("auroc", std::make_shared<M::AUROC>(M::StatScoresOptions(3)));
    acc = register_module("acc", std::make_shared<M::Accuracy>(M::StatScoresOptions(3)));
    mean = register_module("mean", std::make_shared<M::MeanMetric>());
    collection = register_module("collection", std::make_shared<M::MetricCollection>("val_"));
    collection->add("recall", std::make_shared<M::Recall>(M::StatScoresOptions(3)));
    f1->persistent(true);
    auroc->persistent(true);  // Cat states: every score so far
    mean->persistent(true);
    collection->at("val_recall").persistent(true);
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor logits = net->forward(b.input);
    f1->update(logits.detach(), b.target);
    auroc->update(logits.detach(), b.target);
    acc->update(logits.detach(), b.target);
    mean->update(std::get<0>(logits.detach().max(1)));
    collection->update(logits.detach(), b.target);
    return torch::nn::functional::cross_entropy(logits, b.target);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1)), std::nullopt};
  }
  torch::nn::Linear net{nullptr};
  std::shared_ptr<M::F1Score> f1;
  std::shared_ptr<M::AUROC> auroc;
  std::shared_ptr<M::Accuracy> acc;
  std::shared_ptr<M::MeanMetric> mean;
  std::shared_ptr<M::MetricCollection> collection;
};

struct Data : fulgur::DataModule {
  Data(torch::Tensor x, torch::Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  void setup(fulgur::Stage) override { data_ = std::make_shared<fulgur::TensorDataset>(x_, y_); }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(data_, fulgur::DatasetLoaderOptions(8));
  }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return train_dataloader(); }
  torch::Tensor x_, y_;
  std::shared_ptr<const fulgur::Dataset> data_;
};

std::vector<std::string> metric_keys(const c10::Dict<std::string, torch::Tensor>& state) {
  std::vector<std::string> names;
  for (const auto& entry : state) {
    if (entry.key().rfind("net.", 0) != 0) names.push_back(entry.key());
  }
  return names;
}

}  // namespace

TEST_CASE("persistent metric states: in state_dict by module path, loaded back, errors name the key") {
  torch::manual_seed(0);
  Classifier a;
  const torch::Tensor x = torch::randn({10, 3}), y = torch::randint(3, {10});
  a.training_step(fulgur::Batch{x, y}, 0);
  a.training_step(fulgur::Batch{x.slice(0, 0, 4), y.slice(0, 0, 4)}, 1);
  const auto state = fulgur::state_dict(a);
  // Not the Accuracy (not persistent); the collection's member under its path.
  CHECK(metric_keys(state) == std::vector<std::string>{"f1.confmat", "auroc.preds", "auroc.target", "mean.mean_value",
                                                       "mean.weight", "collection.val_recall.confmat"});
  CHECK(state.at("auroc.preds").sizes().vec() == std::vector<int64_t>{14, 3});  // both batches' rows joined

  Classifier b;
  fulgur::load_state_dict(b, state);
  CHECK(torch::equal(b.f1->persistent_states()[0].second, a.f1->persistent_states()[0].second));
  CHECK(b.f1->compute().item<double>() == a.f1->compute().item<double>());
  CHECK(b.auroc->compute().item<double>() == a.auroc->compute().item<double>());
  CHECK(b.mean->compute().item<double>() == a.mean->compute().item<double>());
  CHECK(b.collection->compute().at("val_recall").item<double>() ==
        a.collection->compute().at("val_recall").item<double>());
  CHECK(b.acc->compute().item<double>() == 0.0);  // not persistent: nothing restored

  // A Cat state takes any number of rows, but not another row shape.
  auto wrong = fulgur::state_dict(a);
  wrong.insert_or_assign("auroc.preds", torch::zeros({14, 4}, torch::kFloat64));
  CHECK_THROWS_WITH(fulgur::load_state_dict(b, wrong),
                    doctest::Contains("size mismatch for 'auroc.preds': [AUROC::load_state] state 'preds' is [N, 3], "
                                      "the checkpoint has [14, 4]"));
  // A Sum state's shape is fixed: a 4-class matrix does not fit a 3-class F1.
  wrong = fulgur::state_dict(a);
  wrong.insert_or_assign("f1.confmat", torch::zeros({4, 4}, torch::kLong));
  wrong.insert_or_assign("mean.mean_value", torch::tensor(123.0, torch::kFloat64));
  CHECK_THROWS_WITH(fulgur::load_state_dict(b, wrong),
                    doctest::Contains("size mismatch for 'f1.confmat': [F1Score::load_state] state 'confmat' is [3, 3], "
                                      "the checkpoint has [4, 4]"));
  // Every key is checked before any is loaded: the mean kept the first load's value.
  CHECK(b.mean->compute().item<double>() == a.mean->compute().item<double>());
  wrong = fulgur::state_dict(a);
  REQUIRE(wrong.erase("f1.confmat") == 1);
  CHECK_THROWS_WITH(fulgur::load_state_dict(b, wrong), doctest::Contains("missing key 'f1.confmat'"));
  b.f1->persistent(false);  // the checkpoint's key now has no state to go to
  CHECK_THROWS_WITH(fulgur::load_state_dict(b, state), doctest::Contains("unexpected key 'f1.confmat'"));
}

TEST_CASE("persistent metric states: add_state(..., persistent) keeps those states only") {
  torch::nn::Module owner;
  auto metric = owner.register_module("mean_abs", std::make_shared<MeanAbs>());
  metric->update(torch::tensor({-1.0, 2.0, -4.5}));
  metric->update(torch::tensor({0.5}));
  const auto state = fulgur::state_dict(owner);
  REQUIRE(state.size() == 2);  // "largest" is not persistent
  CHECK(state.at("mean_abs.total").item<double>() == 8.0);
  CHECK(state.at("mean_abs.count").item<int64_t>() == 4);

  torch::nn::Module fresh_owner;
  auto fresh = fresh_owner.register_module("mean_abs", std::make_shared<MeanAbs>());
  fulgur::load_state_dict(fresh_owner, state);
  CHECK(fresh->compute().item<double>() == 2.0);
  CHECK(fresh->compute().item<double>() == metric->compute().item<double>());
  fresh->update(torch::tensor({4.0}));  // goes on from the restored sums
  CHECK(fresh->compute().item<double>() == 12.0 / 5);

  metric->persistent(false);
  CHECK(fulgur::state_dict(owner).size() == 0);
  metric->persistent(true);  // every state now, "largest" too
  CHECK(fulgur::state_dict(owner).size() == 3);
  CHECK(fulgur::state_dict(owner).at("mean_abs.largest").item<double>() == 4.5);
}

TEST_CASE("persistent metric states: saved in a Trainer checkpoint and restored into a fresh module") {
  TempDir dir("metric-state-dict");
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({29, 3});
  const torch::Tensor y = torch::randint(3, {29});
  Data data(x, y);
  Classifier model;
  fulgur::Trainer trainer(fulgur::testing::quiet_options(dir.path().string()).max_epochs(1).logger(false));
  trainer.fit(model, data);
  REQUIRE(model.f1->update_count() == 4);  // 29 rows in batches of 8
  const auto ckpt = dir / "metrics.ckpt";
  trainer.save_checkpoint(ckpt);

  const auto saved = fulgur::CheckpointIO::load(ckpt).at("state_dict").toGenericDict();
  CHECK(saved.contains("f1.confmat"));
  CHECK(saved.at("auroc.preds").toTensor().size(0) == 29);
  CHECK_FALSE(saved.contains("acc.confmat"));

  Classifier fresh;
  fulgur::Trainer restore(fulgur::testing::quiet_options((dir / "restore").string()).logger(false));
  restore.validate(fresh, data, ckpt.string());  // restores the module from the checkpoint
  CHECK(torch::equal(fresh.f1->persistent_states()[0].second, model.f1->persistent_states()[0].second));
  CHECK(torch::equal(fresh.auroc->persistent_states()[0].second, model.auroc->persistent_states()[0].second));
  CHECK(fresh.f1->compute().item<double>() == model.f1->compute().item<double>());
  CHECK(fresh.auroc->compute().item<double>() == model.auroc->compute().item<double>());
  CHECK(fresh.acc->compute().item<double>() == 0.0);
  CHECK(model.acc->compute().item<double>() > 0.0);
}

}  // namespace metric_state_dict_test
