// Manual optimization and several optimizers (Lightning's API), targets of
// any dtype and shape, the module's view of the run, typed hyper-parameters.
// The multi-process side (ddp/horovod replicas, resume) is in
// example_gan_test and example_segmentation_test.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/fulgur.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <type_traits>

namespace manual_optimization_test {

using namespace fulgur;
using fulgur::testing::RegressionData;
using fulgur::testing::quiet_options;
using fulgur::testing::TempDir;

namespace {

/// Two linear maps, each with its own SGD; training_step steps both by hand.
class TwoOptimizers : public LightningModule {
 public:
  explicit TwoOptimizers(bool manual = true) {
    automatic_optimization(!manual);
    a = register_module("a", torch::nn::Linear(4, 1));
    b = register_module("b", torch::nn::Linear(4, 1));
  }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    auto opts = optimizers();
    seen_steps.push_back(trainer()->state().global_step());
    opts[1]->zero_grad();  // b has no gradient now
    toggle_optimizer(*opts[0]);
    b_requires_grad_while_a_toggled = b->weight.requires_grad();
    const torch::Tensor loss_a = torch::mse_loss(a->forward(batch.input).squeeze(1) + b->forward(batch.input).squeeze(1), batch.target);
    opts[0]->zero_grad();
    manual_backward(loss_a);
    b_has_grad_after_a = b->weight.grad().defined();
    if (clip) clip_gradients(*opts[0], 1e-3);
    if (clip) a_grad_norm = a->weight.grad().norm().item<double>();
    opts[0]->step();
    untoggle_optimizer(*opts[0]);
    b_requires_grad_after_untoggle = b->weight.requires_grad();

    const torch::Tensor loss_b = torch::mse_loss(b->forward(batch.input).squeeze(1), batch.target);
    opts[1]->zero_grad();
    manual_backward(loss_b);
    opts[1]->step();
    return loss_b.detach();
  }
  OptimizerConfig configure_optimizers() override {
    auto sgd = [](torch::nn::Module& m) {
      return std::make_shared<torch::optim::SGD>(m.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    };
    auto first = sgd(*a);
    return OptimizerConfig::list(
        {{first, LRSchedulerConfig{std::make_shared<testing::HalvingScheduler>(*first)}}, {sgd(*b), std::nullopt}});
  }
  torch::nn::Linear a{nullptr}, b{nullptr};
  bool clip = false;
  std::vector<int64_t> seen_steps;
  bool b_requires_grad_while_a_toggled = true, b_has_grad_after_a = true, b_requires_grad_after_untoggle = false;
  double a_grad_norm = -1;
};

template <class T>
concept ClassIndexFrom = requires(T value) { class_index(value); };

/// The same parameters with one optimizer: cannot take a two-optimizer state.
struct OneOptimizer : TwoOptimizers {
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.01)), std::nullopt};
  }
};

#define VIEWER_OPTIONS(X)                                  \
  X(double, lr, 0.05, "learning rate", check::Positive{}) \
  X(std::string, name, "viewer", "a name", check::Any{})   \
  X(std::optional<int64_t>, layers, std::nullopt, "layers", check::Any{})
struct ViewerOptions {
  FULGUR_OPTIONS(ViewerOptions, VIEWER_OPTIONS)
};

/// Records what the module sees of the run in an epoch-end hook.
struct Viewer : testing::RecordingModule {
  Viewer() { save_hyperparameters(ViewerOptions()); }
  void on_validation_epoch_end() override {
    device_seen = device();
    gathered = all_gather(torch::tensor({1.0, 2.0}));
    reduced = all_reduce(torch::tensor(3.0));
    // log() from an epoch-end hook is an epoch metric.
    log("from_epoch_end", reduced.item<double>() + static_cast<double>(global_rank() + world_size()));
  }
  torch::Device device_seen{torch::kCUDA};
  torch::Tensor gathered, reduced;
};

}  // namespace

TEST_CASE("manual optimization: two optimizers step by hand; global_step counts optimizer steps; both are checkpointed") {
  TempDir dir("manual-opt");
  RegressionData data(4, 0);
  TwoOptimizers model;
  Trainer trainer(quiet_options(dir.path()).max_epochs(2));
  trainer.fit(model, data);
  CHECK(trainer.state().global_step() == 2 * 2 * 4);
  CHECK(model.seen_steps == std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14});
  CHECK_FALSE(model.b_requires_grad_while_a_toggled);
  CHECK_FALSE(model.b_has_grad_after_a);  // toggled off: no gradient flowed into b
  CHECK(model.b_requires_grad_after_untoggle);
  // Manual optimization steps its own schedulers: the Trainer did not halve the LR.
  CHECK(trainer.optimizers()[0].optimizer->param_groups()[0].options().get_lr() == 0.01);

  const auto c = CheckpointIO::load(dir.path() / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt");
  REQUIRE(c.at("optimizer_states").toList().size() == 2);
  CHECK(c.at("lr_schedulers").toList().size() == 1);
  // Momentum buffers of both optimizers, in PyTorch's layout.
  for (size_t i = 0; i < 2; ++i) {
    CHECK(c.at("optimizer_states").toList().get(i).toGenericDict().at("state").toGenericDict().size() == 2);
  }

  // A model with one optimizer cannot take that state: one clear error.
  OneOptimizer single;
  Trainer resume(quiet_options((dir.path() / "other").string()).max_epochs(3));
  CHECK_THROWS_WITH(resume.fit(single, data, (dir.path() / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt").string()),
                    doctest::Contains("holds 2 optimizer states, the model has 1"));
}

TEST_CASE("manual optimization: clip_gradients bounds the norm; what Lightning refuses is refused") {
  TempDir dir("manual-opt-refused");
  RegressionData data(2, 0);
  {
    TwoOptimizers model;
    model.clip = true;
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
    trainer.fit(model, data);
    CHECK(model.a_grad_norm <= 1e-3 + 1e-9);
  }
  {
    TwoOptimizers automatic(/*manual=*/false);
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
    CHECK_THROWS_WITH(trainer.fit(automatic, data),
                      "[Trainer::fit] configure_optimizers returned 2 optimizers, but automatic optimization steps one; "
                      "with several optimizers use manual optimization: automatic_optimization(false) in the module's "
                      "constructor, then manual_backward() and optimizers()[i]->step() in training_step");
  }
  {
    TwoOptimizers model;
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false).accumulate_grad_batches(2));
    CHECK_THROWS_WITH(trainer.fit(model, data),
                      "[Trainer::fit] accumulate_grad_batches=2 is not supported with manual optimization; "
                      "accumulate in training_step (step the optimizer every N batches)");
  }
  {
    TwoOptimizers model;
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false).gradient_clip_val(1.0));
    CHECK_THROWS_WITH(trainer.fit(model, data), doctest::Contains("gradient_clip_val=1 is not supported with manual optimization"));
  }
  {
    // manual_backward belongs to manual optimization.
    struct Automatic : testing::RecordingModule {
      torch::Tensor training_step(const Batch& batch, int64_t i) override {
        torch::Tensor loss = RecordingModule::training_step(batch, i);
        manual_backward(loss);
        return loss;
      }
    } model;
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
    CHECK_THROWS_WITH(trainer.fit(model, data), doctest::Contains("[LightningModule::manual_backward] is for manual optimization"));
  }
  // Outside a run there are no optimizers.
  TwoOptimizers idle;
  CHECK_THROWS_WITH(idle.optimizers(), doctest::Contains("[LightningModule::optimizers] called outside a Trainer run"));
}

TEST_CASE("targets of any dtype and shape: float targets are never truncated; class_index takes integers only") {
  // Compile-time: a double cannot become a target or a class index silently.
  static_assert(!std::is_assignable_v<torch::Tensor&, double>);
  static_assert(!ClassIndexFrom<double>);
  static_assert(!ClassIndexFrom<float>);
  static_assert(ClassIndexFrom<int64_t>);

  struct Floats : Dataset {
    int64_t size() const override { return 4; }
    Example get(int64_t i) const override {
      return {torch::full({2}, static_cast<float>(i)), torch::tensor(0.25 * static_cast<double>(i) + 0.7), {}};
    }
  };
  auto dataset = std::make_shared<Floats>();
  DatasetLoader loader(dataset, DatasetLoaderOptions(4).num_workers(2));
  auto batches = loader.iterate();
  const auto batch = batches->next();
  REQUIRE(batch);
  CHECK((batch->target.scalar_type() == torch::kFloat));  // torch::tensor(double): the default dtype
  CHECK(torch::equal(batch->target, torch::tensor({0.7, 0.95, 1.2, 1.45})));

  // A dense target (a mask) stacks like the input; a class index is int64.
  struct Masks : Dataset {
    int64_t size() const override { return 3; }
    Example get(int64_t i) const override { return {torch::zeros({1, 4, 4}), torch::full({1, 4, 4}, 0.5f * i), {}}; }
  };
  const Batch masks = Masks().get_batch({0, 1, 2});
  CHECK(masks.target.sizes() == torch::IntArrayRef({3, 1, 4, 4}));
  CHECK(masks.target[2][0][3][3].item<float>() == 1.0f);
  CHECK((class_index(3).scalar_type() == torch::kLong));
  CHECK(class_index(3).dim() == 0);

  // TensorDataset carries float targets through get() too.
  TensorDataset floats(torch::randn({3, 2}), torch::tensor({0.5, 1.5, 2.5}));
  CHECK(floats.get(1).target.item<double>() == 1.5);
}

TEST_CASE("the module's view of the run: device, ranks and collectives; typed hyper-parameters in hparams.yaml") {
  TempDir dir("module-view");
  Viewer model;
  CHECK(model.device() == torch::Device(torch::kCPU));
  CHECK(model.world_size() == 1);
  CHECK(model.hparams().at("lr").toDouble() == 0.05);
  CHECK(model.hparams().at("name").toStringRef() == "viewer");
  CHECK(model.hparams().at("layers").isNone());

  RegressionData data(2, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1));
  trainer.fit(model, data);
  CHECK(model.device_seen == torch::Device(torch::kCPU));
  CHECK(model.gathered.sizes() == torch::IntArrayRef({1, 2}));
  CHECK(model.reduced.item<double>() == 3.0);
  CHECK(trainer.state().callback_metrics().at("from_epoch_end") == 4.0);
  const std::string yaml = testing::read_file(dir.path() / "fulgur_logs" / "version_0" / "hparams.yaml");
  CHECK(yaml.find("lr: 0.05") != std::string::npos);
  CHECK(yaml.find("name: viewer") != std::string::npos);

  // A flat map works the same.
  model.save_hyperparameters({{"lr", 0.1}, {"layers", 3}, {"name", "flat"}, {"bn", true}});
  CHECK(model.hparams().at("layers").toInt() == 3);
  CHECK(model.hparams().at("name").toStringRef() == "flat");
  CHECK(model.hparams().at("bn").toBool());
}

}  // namespace manual_optimization_test
