#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <ATen/autocast_mode.h>
#include <doctest/doctest.h>

namespace precision_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

/// Records the dtype a linear layer produces inside the steps.
struct DtypeProbe : testing::RecordingModule {
  std::vector<torch::ScalarType> train_dtypes;
  std::vector<torch::ScalarType> val_dtypes;
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    const torch::Tensor out = linear->forward(batch.input).squeeze(1);
    train_dtypes.push_back(out.scalar_type());
    return torch::mse_loss(out.to(torch::kFloat32), batch.target);
  }
  void validation_step(const Batch& batch, int64_t) override {
    val_dtypes.push_back(linear->forward(batch.input).scalar_type());
  }
};

}  // namespace

TEST_CASE("precision: bf16-mixed autocasts linear layers on CPU, weights stay float32") {
  TempDir dir("precision-bf16");
  DtypeProbe model;
  RegressionData data(3, 1);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).precision(PrecisionMode::BF16Mixed).logger(false));
  trainer.fit(model, data);
  REQUIRE(model.train_dtypes.size() == 3);
  for (auto t : model.train_dtypes) CHECK((t == torch::kBFloat16));
  REQUIRE_FALSE(model.val_dtypes.empty());
  for (auto t : model.val_dtypes) CHECK((t == torch::kBFloat16));
  CHECK((model.linear->weight.scalar_type() == torch::kFloat32));
  // Autocast is switched off again outside the steps.
  CHECK_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  CHECK((model.linear->forward(torch::ones({1, 4})).scalar_type() == torch::kFloat32));
}

TEST_CASE("precision: 32-true leaves float32 alone") {
  TempDir dir("precision-32");
  DtypeProbe model;
  RegressionData data(2, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
  trainer.fit(model, data);
  for (auto t : model.train_dtypes) CHECK((t == torch::kFloat32));
}

TEST_CASE("precision: bf16-mixed still trains (loss goes down)") {
  TempDir dir("precision-bf16-train");
  testing::RecordingModule model(4, 0.05);
  RegressionData data(8, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(15).precision(PrecisionMode::BF16Mixed).logger(false));
  const double before = trainer.validate(model, data).at("val_loss");
  trainer.fit(model, data);
  const double after = trainer.validate(model, data).at("val_loss");
  CHECK(after < before * 0.05);
}

TEST_CASE("precision: the float16 gradient scaler needs a GPU and says so") {
  CHECK_THROWS_WITH_AS(Trainer(TrainerOptions().precision(PrecisionMode::FP16Mixed).accelerator(AcceleratorKind::Cpu)),
                       "[TrainerConfig::resolve] precision '16-mixed' needs a GPU (float16 autocast with a gradient "
                       "scaler); on CPU use 'bf16-mixed'",
                       std::invalid_argument);
}

}  // namespace precision_test
