// The online layer: SampleStream, Fabric, OnlineTrainer (inline and background).
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_config.hpp>
#include <fulgur/online/online_model_registry.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/online/sample_stream.hpp>
#include <fulgur/online/stream_data_module.hpp>
#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <utility>
#include <fstream>
#include <sstream>
#include <thread>

namespace online_test {

using namespace fulgur;
using fulgur::testing::error_of;
using fulgur::testing::quiet_options;
using fulgur::testing::TempDir;

namespace {

/// A small regression MLP that logs its loss.
struct Mlp : LightningModule {
  Mlp() {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(4, 16), torch::nn::Tanh(),
                                                       torch::nn::Linear(16, 2)));
  }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    // The functional form, as a Lightning user writes F.mse_loss: it warns when it would broadcast the target.
    torch::Tensor loss = torch::nn::functional::mse_loss(net->forward(batch.input), batch.target);
    log("train_loss", loss);
    return loss;
  }
  torch::Tensor predict_step(const Batch& batch, int64_t) override { return net->forward(batch.input); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(1e-2)), std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

/// Two scalars that every step moves to the same value: a snapshot taken
/// between two steps always has a == b.
struct Twins : LightningModule {
  Twins() {
    a = register_parameter("a", torch::zeros({1}));
    b = register_parameter("b", torch::zeros({1}));
  }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    const torch::Tensor t = batch.target.mean();
    return (a - t).pow(2).sum() + (b - t).pow(2).sum();
  }
  torch::Tensor predict_step(const Batch&, int64_t) override { return torch::cat({a, b}); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.25)), std::nullopt};
  }
  torch::Tensor a, b;
};

/// The function the surrogate learns.
torch::Tensor truth(const torch::Tensor& x) {
  return torch::stack({x.sum(1).sin(), (x.narrow(1, 0, 2).prod(1))}, 1);
}

std::vector<Batch> fixed_batches(int64_t count, int64_t size) {
  torch::manual_seed(11);
  std::vector<Batch> out;
  for (int64_t i = 0; i < count; ++i) {
    torch::Tensor x = torch::rand({size, 4}) * 2 - 1;
    out.push_back(Batch{x, truth(x), {}});
  }
  return out;
}

struct RecordingLogger : Logger {
  std::string name() const override { return "recording"; }
  std::filesystem::path log_dir() override { return "."; }
  void log_hyperparams(const YAML::Node&) override {}
  void log_metrics(const std::map<std::string, double>& metrics, int64_t step) override {
    rows.emplace_back(step, metrics);
  }
  std::vector<std::pair<int64_t, std::map<std::string, double>>> rows;
};

OnlineOptions online_options(const TempDir& dir) {
  OnlineOptions options;
  options.trainer = quiet_options(dir.path()).logger(false);
  return options;
}

bool same_weights(torch::nn::Module& a, torch::nn::Module& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("inline train_step on a fixed stream equals fit on the same samples in the same order, bit for bit") {
  TempDir dir("online-inline");
  const std::vector<Batch> batches = fixed_batches(8, 4);

  // fit on another thread's pushes, one sample at a time; 3 steps an epoch,
  // so the stream's end cuts the third epoch short and ends fit.
  torch::manual_seed(3);
  Mlp fitted;
  auto stream = std::make_shared<SampleStream>(
      SampleStreamOptions{.capacity = 6, .when_full = WhenFull::Block, .batch_size = 4, .steps_per_epoch = 3});
  std::thread producer([&] {
    for (const Batch& b : batches) {
      for (int64_t i = 0; i < b.size(); ++i) stream->push(b.input.narrow(0, i, 1), b.target.narrow(0, i, 1));
    }
    stream->end();
  });
  StreamDataModule data(stream);
  Trainer trainer(quiet_options(dir.path().string()).max_epochs(-1).logger(false).enable_checkpointing(false));
  trainer.fit(fitted, data);
  producer.join();
  CHECK(trainer.state().global_step() == 8);
  CHECK(stream->exhausted());

  torch::manual_seed(3);
  OnlineTrainer online([] { return std::make_shared<Mlp>(); }, online_options(dir));
  std::vector<double> losses;
  for (const Batch& b : batches) losses.push_back(online.train_step(b.input, b.target));
  CHECK(online.global_step() == 8);
  CHECK(same_weights(fitted, online.module()));
  CHECK(losses.back() < losses.front());
}

TEST_CASE("background mode trains from a producer that keeps pushing; predict sees published weights") {
  TempDir dir("online-background");
  torch::manual_seed(5);
  OnlineOptions options = online_options(dir);
  options.stream = SampleStreamOptions{
      .capacity = 512, .when_full = WhenFull::Replay, .batch_size = 32, .steps_per_epoch = 100, .seed = 7};
  options.publish_every_n_steps = 25;
  options.max_steps = 600;
  options.num_threads = 1;
  OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
  const torch::Tensor probe = torch::rand({256, 4}) * 2 - 1;
  const double before = torch::mse_loss(online.predict(probe), truth(probe)).item<double>();
  CHECK(online.published_step() == 0);

  online.start();
  int64_t pushes = 0;
  int64_t last_seen = 0;
  bool monotonic = true;
  while (online.running()) {
    const torch::Tensor x = torch::rand({16, 4}) * 2 - 1;
    online.push(x, truth(x));
    ++pushes;
    online.predict(probe);
    const int64_t seen = online.published_step();
    monotonic = monotonic && seen >= last_seen && seen % 25 == 0;
    last_seen = seen;
  }
  online.stop();
  CHECK(monotonic);
  CHECK(online.global_step() == 600);
  CHECK(online.published_step() == 600);
  CHECK(pushes > 0);
  const double after = torch::mse_loss(online.predict(probe), truth(probe)).item<double>();
  MESSAGE("probe mse before " << before << ", after 600 background steps " << after);
  CHECK(after < before / 4);
  // After stop() the published weights are the trained ones.
  torch::NoGradGuard no_grad;
  auto& trained = dynamic_cast<Mlp&>(online.module());
  CHECK(torch::equal(online.predict(probe), trained.net->forward(probe)));
}

TEST_CASE("predict returns one step's weights, never a half-updated model") {
  TempDir dir("online-snapshot");
  OnlineOptions options = online_options(dir);
  options.stream = SampleStreamOptions{.capacity = 64, .when_full = WhenFull::Replay, .batch_size = 4, .seed = 1};
  options.publish_every_n_steps = 1;
  options.max_steps = 2000;
  OnlineTrainer online([] { return std::make_shared<Twins>(); }, options);
  online.start();
  int64_t reads = 0;
  bool consistent = true;
  float value = 0.0F;
  while (online.running()) {
    const torch::Tensor x = torch::zeros({4, 1});
    online.push(x, torch::full({4, 1}, static_cast<float>(reads % 7)));
    const torch::Tensor ab = online.predict(x);
    consistent = consistent && ab[0].item<float>() == ab[1].item<float>();
    value = ab[0].item<float>();
    ++reads;
  }
  online.stop();
  CHECK(consistent);
  CHECK(reads > 0);
  CHECK(value == value);  // read back, not NaN
}

TEST_CASE("a push whose shape or dtype differs from the first is refused with both shapes; the buffer is kept") {
  SampleStream stream(SampleStreamOptions{.capacity = 16, .batch_size = 2});
  stream.push(torch::zeros({2, 4}), torch::zeros({2, 2}));
  CHECK(error_of([&] { stream.push(torch::zeros({1, 3}), torch::zeros({1, 2})); }) ==
        "[SampleStream::push] inputs sample shape [3] dtype Float differs from the first push's [4] Float");
  CHECK(error_of([&] { stream.push(torch::zeros({1, 4}), torch::zeros({1, 2}, torch::kFloat64)); }) ==
        "[SampleStream::push] targets sample shape [2] dtype Double differs from the first push's [2] Float");
  CHECK(error_of([&] { stream.push(torch::zeros({3, 4}), torch::zeros({2, 2})); }) ==
        "[SampleStream::push] inputs hold 3 samples but targets 2");
  CHECK(stream.buffered() == 2);
  CHECK(stream.pushed() == 2);
  stream.end();
  CHECK(error_of([&] { stream.push(torch::zeros({1, 4}), torch::zeros({1, 2})); }) ==
        "[SampleStream::push] the stream has ended (end() was called)");
  CHECK(stream.next_batch()->size() == 2);
  CHECK_FALSE(stream.next_batch().has_value());
  CHECK(error_of([] { SampleStream(SampleStreamOptions{.capacity = 4, .batch_size = 8}); }) ==
        "[SampleStreamOptions] batch_size (8) and min_samples (8) must not exceed capacity (4)");
}

TEST_CASE("push copies the caller's memory; drop_oldest keeps the newest; block waits for the reader") {
  SUBCASE("raw pointers are copied before push returns") {
    SampleStream stream(SampleStreamOptions{.capacity = 4, .batch_size = 2});
    std::vector<float> x{1, 2, 3, 4}, y{10, 20};
    stream.push(x.data(), {2, 2}, y.data(), {2, 1});
    x.assign(4, -1.0F);
    y.assign(2, -1.0F);
    const Batch b = *stream.next_batch();
    CHECK(torch::equal(b.input, torch::tensor({1.0F, 2.0F, 3.0F, 4.0F}).view({2, 2})));
    CHECK(torch::equal(b.target, torch::tensor({10.0F, 20.0F}).view({2, 1})));
  }
  SUBCASE("DropOldest") {
    SampleStream stream(SampleStreamOptions{.capacity = 4, .when_full = WhenFull::DropOldest, .batch_size = 4});
    stream.push(torch::arange(10, torch::kFloat32).view({10, 1}), torch::zeros({10, 1}));
    CHECK(stream.dropped() == 6);
    CHECK(torch::equal(stream.next_batch()->input.flatten(), torch::arange(6, 10, torch::kFloat32)));
  }
  SUBCASE("Block") {
    SampleStream stream(SampleStreamOptions{.capacity = 4, .when_full = WhenFull::Block, .batch_size = 4});
    std::thread producer([&] {
      stream.push(torch::arange(4, torch::kFloat32).view({4, 1}), torch::zeros({4, 1}));
      stream.push(torch::arange(4, 8, torch::kFloat32).view({4, 1}), torch::zeros({4, 1}));  // waits for room
      stream.end();
    });
    CHECK(torch::equal(stream.next_batch()->input.flatten(), torch::arange(4, torch::kFloat32)));
    CHECK(torch::equal(stream.next_batch()->input.flatten(), torch::arange(4, 8, torch::kFloat32)));
    CHECK_FALSE(stream.next_batch().has_value());
    producer.join();
    CHECK(stream.dropped() == 0);
    CHECK(stream.pushed() == 8);
  }
  SUBCASE("Replay draws the seeded sample") {
    auto draw = [] {
      SampleStream stream(SampleStreamOptions{.capacity = 8, .when_full = WhenFull::Replay, .batch_size = 4, .seed = 3});
      stream.push(torch::arange(8, torch::kFloat32).view({8, 1}), torch::zeros({8, 1}));
      return torch::cat({stream.next_batch()->input, stream.next_batch()->input});
    };
    const torch::Tensor first = draw();
    CHECK(torch::equal(first, draw()));
    CHECK_FALSE(torch::equal(first, first[0].expand_as(first)));  // not one sample repeated
  }
}

TEST_CASE("a NaN loss stops with one error and keeps the weights trained so far") {
  TempDir dir("online-nan");
  const std::vector<Batch> batches = fixed_batches(2, 4);
  SUBCASE("inline") {
    OnlineTrainer online([] { return std::make_shared<Mlp>(); }, online_options(dir));
    online.train_step(batches[0].input, batches[0].target);
    std::vector<torch::Tensor> kept;
    for (const auto& p : online.module().parameters()) kept.push_back(p.detach().clone());
    const torch::Tensor bad = torch::full({4, 4}, std::numeric_limits<float>::quiet_NaN());
    CHECK(error_of([&] { online.train_step(bad, batches[1].target); }) ==
          "[OnlineTrainer] the loss of step 2 is nan on rank 0: no step was taken; the weights after step 1 are "
          "kept (published for predict())");
    CHECK(online.published_step() == 1);
    const auto now = online.module().parameters();
    for (size_t i = 0; i < kept.size(); ++i) CHECK(torch::equal(kept[i], now[i]));
    CHECK(online.global_step() == 1);
    online.train_step(batches[1].input, batches[1].target);  // training goes on
    CHECK(online.global_step() == 2);
  }
  SUBCASE("background") {
    OnlineOptions options = online_options(dir);
    options.stream = SampleStreamOptions{.capacity = 8, .when_full = WhenFull::Block, .batch_size = 4};
    OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
    online.start();
    online.push(batches[0].input, batches[0].target);
    online.push(torch::full({4, 4}, std::numeric_limits<float>::quiet_NaN()), batches[1].target);
    const std::string error = error_of([&] { online.stop(); });
    CHECK(error ==
          "[OnlineTrainer] background training stopped at step 1: [OnlineTrainer] the loss of step 2 is nan on rank "
          "0: no step was taken; the weights after step 1 are kept (published for predict())");
    CHECK(online.global_step() == 1);
    CHECK(online.published_step() == 1);
    CHECK(torch::isfinite(online.predict(batches[0].input)).all().item<bool>());
  }
}

TEST_CASE("an Inf input with a finite loss (tanh saturates) but NaN gradients takes no step; skip counts it") {
  TempDir dir("online-inf");
  const std::vector<Batch> batches = fixed_batches(2, 4);
  torch::Tensor inf_input = batches[1].input.clone();
  inf_input[0][0] = std::numeric_limits<float>::infinity();
  for (const OnNonFinite mode : {OnNonFinite::Stop, OnNonFinite::Skip}) {
    CAPTURE(static_cast<int>(mode));
    OnlineOptions options = online_options(dir);
    options.on_nonfinite = mode;
    options.publish_every_n_steps = 1;
    OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
    online.train_step(batches[0].input, batches[0].target);
    std::vector<torch::Tensor> kept;
    for (const auto& p : online.module().parameters()) kept.push_back(p.detach().clone());
    if (mode == OnNonFinite::Stop) {
      const std::string error = error_of([&] { online.train_step(inf_input, batches[1].target); });
      CHECK(error.find("[OnlineTrainer] the gradient of 'net.0.weight' in step 2 holds NaN or Inf on rank 0 (loss ") ==
            0);
      CHECK(error.find("no step was taken") != std::string::npos);
    } else {
      const double loss = online.train_step(inf_input, batches[1].target);
      CHECK(std::isfinite(loss));  // the loss alone would not have caught it
      CHECK(online.skipped_steps() == 1);
    }
    CHECK(online.global_step() == 1);
    const auto now = online.module().parameters();
    for (size_t i = 0; i < kept.size(); ++i) CHECK(torch::equal(kept[i], now[i]));
    CHECK(torch::isfinite(online.predict(batches[0].input)).all().item<bool>());
    online.train_step(batches[1].input, batches[1].target);  // the next finite step is taken
    CHECK(online.global_step() == 2);
    for (const auto& p : online.module().parameters()) CHECK(torch::isfinite(p).all().item<bool>());
  }
}

namespace {

/// Waits (up to 60 s) until `done` holds, looking every 10 ms; false on timeout.
template <class Condition>
bool eventually(Condition done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

TEST_CASE("SIGTERM while background training waits for samples: it saves, stops, and every later call says so") {
  TempDir dir("online-sigterm-waiting");
  OnlineOptions options = online_options(dir);
  options.checkpoint_dir = dir / "ckpt";
  options.stream = SampleStreamOptions{.capacity = 16, .when_full = WhenFull::Block, .batch_size = 4};
  OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
  const std::vector<Batch> batches = fixed_batches(1, 4);
  online.start();
  online.push(batches[0].input, batches[0].target);
  REQUIRE(eventually([&] { return online.global_step() == 1; }));  // now it waits for samples nobody pushes
  std::raise(SIGTERM);
  REQUIRE(eventually([&] { return online.stop_signal() != 0; }));
  CHECK(online.stop_signal() == SIGTERM);
  CHECK(std::filesystem::exists(online.last_checkpoint()));
  CHECK_THROWS_AS(online.push(batches[0].input, batches[0].target), StoppedError);
  CHECK_THROWS_AS(online.train_step(batches[0].input, batches[0].target), StoppedError);
  CHECK_NOTHROW(online.stop());
  CHECK(online.global_step() == 1);
}

TEST_CASE("SIGTERM with a producer faster than training: it saves, and the producer's push returns StoppedError") {
  TempDir dir("online-sigterm-push");
  OnlineOptions options = online_options(dir);
  options.checkpoint_dir = dir / "ckpt";
  options.stream = SampleStreamOptions{.capacity = 8, .when_full = WhenFull::Block, .batch_size = 4};
  OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
  const std::vector<Batch> batches = fixed_batches(1, 4);
  online.start();
  std::atomic<int> pushes{0};
  std::string error;
  std::thread producer([&] {
    try {
      for (;;) {  // as fast as it can: mostly blocked in push, waiting for room
        online.push(batches[0].input, batches[0].target);
        pushes.fetch_add(1);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  REQUIRE(eventually([&] { return online.global_step() >= 3; }));
  std::raise(SIGTERM);
  producer.join();  // returns: the stream ended when training stopped on the signal
  CHECK(error.find("[OnlineTrainer::push] training stopped on SIGTERM and saved ") == 0);
  CHECK(online.stop_signal() == SIGTERM);
  CHECK(std::filesystem::exists(online.last_checkpoint()));
  CHECK_NOTHROW(online.stop());
}

TEST_CASE("SIGUSR1 alone (SLURM's warning) during an inline step: the step is taken and saved, later calls say so, a restart resumes, and SIGUSR1 is the program's between steps and after") {
  TempDir dir("online-sigusr1");
  OnlineOptions options = online_options(dir);
  options.checkpoint_dir = dir / "ckpt";
  const std::vector<Batch> batches = fixed_batches(3, 4);
  struct sigaction before {};
  REQUIRE(sigaction(SIGUSR1, nullptr, &before) == 0);
  REQUIRE(bool(before.sa_handler == SIG_DFL));  // with no run holding it, a SIGUSR1 would end this test program
  // SLURM's warning in the middle of a step (between steps it is the program's own).
  struct UsrInStep : Mlp {
    bool raise_next = false;
    torch::Tensor training_step(const Batch& batch, int64_t idx) override {
      if (std::exchange(raise_next, false)) std::raise(SIGUSR1);
      return Mlp::training_step(batch, idx);
    }
  };
  {
    OnlineTrainer online([] { return std::make_shared<UsrInStep>(); }, options);
    online.train_step(batches[0].input, batches[0].target);
    struct sigaction between {};
    REQUIRE(sigaction(SIGUSR1, nullptr, &between) == 0);
    CHECK(bool(between.sa_handler == SIG_DFL));  // nothing held between inline steps
    dynamic_cast<UsrInStep&>(online.module()).raise_next = true;
    const double loss = online.train_step(batches[1].input, batches[1].target);  // recorded; acted on at its end
    CHECK(std::isfinite(loss));
    CHECK(online.stop_signal() == SIGUSR1);
    CHECK(online.global_step() == 2);
    CHECK(std::filesystem::exists(online.last_checkpoint()));
    const std::string error = error_of([&] { online.train_step(batches[2].input, batches[2].target); });
    CHECK(error.find("[OnlineTrainer::train_step] training stopped on SIGUSR1 and saved ") == 0);
    CHECK(online.global_step() == 2);
    CHECK_NOTHROW(online.stop());
    struct sigaction after {};
    REQUIRE(sigaction(SIGUSR1, nullptr, &after) == 0);
    CHECK(bool(after.sa_handler == SIG_DFL));  // put back at stop(), not at destruction
  }
  OnlineTrainer restarted([] { return std::make_shared<Mlp>(); }, options);
  CHECK(restarted.global_step() == 2);
  CHECK(restarted.stop_signal() == 0);
  restarted.train_step(batches[2].input, batches[2].target);
  CHECK(restarted.global_step() == 3);
}

/// Trains a mean on a target of one value per sample and predicts the mean
/// and a spread beside it: its prediction is wider than its target, and right.
struct MeanAndSpread : LightningModule {
  MeanAndSpread() { net = register_module("net", torch::nn::Linear(4, 2)); }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    return torch::nn::functional::mse_loss(net->forward(batch.input).narrow(1, 0, 1), batch.target);
  }
  torch::Tensor predict_step(const Batch& batch, int64_t) override { return net->forward(batch.input); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.01)), std::nullopt};
  }
  torch::nn::Linear net{nullptr};
};

TEST_CASE("targets the loss would broadcast are refused at the first step; a prediction wider than the target is not") {
  TempDir dir("online-shapes");
  const std::vector<Batch> batches = fixed_batches(1, 4);  // the Mlp outputs [4, 2]
  const std::string expected = "[OnlineTrainer] the loss would broadcast the targets of shape [4, 1]: Using a target "
                               "size ([4, 1]) that is different to the input size ([4, 2])";
  OnlineTrainer inline_mode([] { return std::make_shared<Mlp>(); }, online_options(dir));
  CHECK(error_of([&] { inline_mode.train_step(batches[0].input, torch::zeros({4, 1})); }).rfind(expected, 0) == 0);
  CHECK(inline_mode.global_step() == 0);  // refused before backward: no step
  // Another rank is the model's business (a squeeze in training_step, class indices): not refused here.
  OnlineTrainer squeezing([] { return std::make_shared<fulgur::testing::RecordingModule>(); }, online_options(dir));
  CHECK_NOTHROW(squeezing.train_step(batches[0].input, torch::zeros({4})));
  CHECK_NOTHROW(inline_mode.train_step(batches[0].input, batches[0].target));
  // In the background the samples are taken; the first step refuses them, and stop() says why.
  OnlineOptions options = online_options(dir);
  options.stream = SampleStreamOptions{.capacity = 8, .when_full = WhenFull::Block, .batch_size = 4};
  OnlineTrainer background([] { return std::make_shared<Mlp>(); }, options);
  background.push(batches[0].input, torch::zeros({4, 1}));
  background.start();
  CHECK(error_of([&] { background.stop(); }).find(expected) != std::string::npos);
  CHECK(background.global_step() == 0);
  // A model whose prediction ([N, 2]: mean and spread) is wider than its target ([N, 1]) trains, inline and from pushes.
  OnlineTrainer wider_inline([] { return std::make_shared<MeanAndSpread>(); }, online_options(dir));
  CHECK_NOTHROW(wider_inline.train_step(batches[0].input, torch::zeros({4, 1})));
  CHECK(wider_inline.global_step() == 1);
  OnlineTrainer wider([] { return std::make_shared<MeanAndSpread>(); }, options);
  wider.start();
  for (int i = 0; i < 4; ++i) wider.push(batches[0].input, torch::zeros({4, 1}));
  CHECK_NOTHROW(wider.stop());
  CHECK(wider.global_step() >= 1);
}

TEST_CASE("pause() holds background training between steps until resume(); pushes still fill the stream") {
  TempDir dir("online-pause");
  OnlineOptions options = online_options(dir);
  options.stream = SampleStreamOptions{.capacity = 64, .when_full = WhenFull::Replay, .batch_size = 4};
  OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
  const std::vector<Batch> batches = fixed_batches(2, 4);
  online.pause();  // not running yet: returns at once
  online.resume();
  online.start();
  online.push(batches[0].input, batches[0].target);
  REQUIRE(eventually([&] { return online.global_step() >= 2; }));
  online.pause();
  CHECK(online.paused());
  const int64_t held = online.global_step();
  for (int i = 0; i < 5; ++i) online.push(batches[1].input, batches[1].target);
  CHECK(online.global_step() == held);  // pause() returned with the thread parked: no step since
  online.resume();
  CHECK(eventually([&] { return online.global_step() > held; }));
  online.pause();  // and stop() ends a paused run
  CHECK_NOTHROW(online.stop());
  CHECK(std::isfinite(online.last_loss()));
}

// The C API (libfulgur_online) builds its trainer so too; its own tests are C programs (online_c_api_test).
TEST_CASE("a YAML file's online.log_dir keeps what the model logs (train_loss) in metrics.csv when the trainer ends") {
  TempDir dir("online-c-log-dir");
  const std::string config = (dir / "c.yaml").string();
  std::ofstream(config) << "model: {type: mlp, layers: [2, 8, 1]}\nonline: {log_dir: " << (dir / "logs").string()
                        << "}\ntrainer: {accelerator: cpu, log_every_n_steps: 1}\n";
  {
    const std::unique_ptr<OnlineTrainer> trainer = OnlineConfig::from_yaml_file(config).make_trainer();
    const torch::Tensor x = torch::full({4, 2}, 0.5), y = torch::ones({4, 1});
    for (int i = 0; i < 3; ++i) CHECK(std::isfinite(trainer->train_step(x, y)));
  }
  const auto csv = dir / "logs" / "fulgur_logs" / "version_0" / "metrics.csv";
  REQUIRE(std::filesystem::exists(csv));
  const std::string text = fulgur::testing::read_file(csv);
  CHECK(text.find("train_loss") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 4);  // the header and one row per step
}

TEST_CASE("push into a full blocking stream before start() fails at once instead of waiting forever") {
  TempDir dir("online-push-before-start");
  OnlineOptions options = online_options(dir);
  options.stream = SampleStreamOptions{.capacity = 4, .when_full = WhenFull::Block, .batch_size = 4};
  OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options);
  const std::vector<Batch> batches = fixed_batches(1, 4);
  online.push(batches[0].input, batches[0].target);  // fits: a pre-filled stream is fine
  CHECK(error_of([&] { online.push(batches[0].input, batches[0].target); }) ==
        "[OnlineTrainer::push] the blocking stream holds 4 of 4 samples and background training has not started: "
        "this push would wait forever; call start() first");
}

TEST_CASE("fit ends cleanly on a stream that ends before any sample") {
  TempDir dir("online-empty");
  auto stream = std::make_shared<SampleStream>(SampleStreamOptions{.capacity = 8, .batch_size = 4, .steps_per_epoch = 5});
  stream->end();
  StreamDataModule data(stream);
  Mlp model;
  Trainer trainer(quiet_options(dir.path().string()).max_epochs(-1).logger(false).enable_checkpointing(false));
  trainer.fit(model, data);
  CHECK(trainer.state().global_step() == 0);
}

TEST_CASE("Fabric: log() reaches the loggers; outside any run LightningModule::log warns once and returns") {
  TempDir dir("online-fabric-log");
  Mlp outside;
  std::ostringstream captured;
  auto* previous = std::cerr.rdbuf(captured.rdbuf());
  CHECK_NOTHROW(outside.log("lonely", 1.0));
  CHECK_NOTHROW(outside.log("lonely", 2.0));
  std::cerr.rdbuf(previous);
  const std::string said = captured.str();
  CHECK(said.find("dropped (said once)") == said.rfind("dropped (said once)"));  // at most once

  auto logger = std::make_shared<RecordingLogger>();
  Mlp model;  // outlives the Fabric, which detaches from it when it ends
  Fabric fabric(quiet_options(dir.path().string()).log_every_n_steps(1), {logger});
  fabric.setup(model);
  const std::vector<Batch> batches = fixed_batches(3, 4);
  for (const Batch& b : batches) fabric.training_step(b);
  fabric.log("custom", 4.5);
  REQUIRE(logger->rows.size() == 4);
  CHECK(logger->rows[0].first == 1);
  CHECK(logger->rows[2].first == 3);
  CHECK(logger->rows[2].second.count("train_loss") == 1);
  CHECK(logger->rows[3].second.at("custom") == 4.5);
  CHECK(fabric.global_step() == 3);
  CHECK(model.device() == torch::Device(torch::kCPU));
  CHECK(error_of([&] { fabric.setup(model); }) == "[Fabric::setup] a Fabric sets up one module");
}

namespace {

/// An Mlp whose optimizer has a ReduceLROnPlateau on `monitor` (patience 0,
/// factor 0.5): each epoch whose monitored value does not improve halves the rate.
struct PlateauMlp : Mlp {
  explicit PlateauMlp(std::string monitor) : monitor_(std::move(monitor)) {}
  OptimizerConfig configure_optimizers() override {
    auto sgd = std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1));
    auto plateau = std::make_shared<torch::optim::ReduceLROnPlateauScheduler>(
        *sgd, torch::optim::ReduceLROnPlateauScheduler::SchedulerMode::min, 0.5f, 0);
    return {sgd, LRSchedulerConfig{.plateau = plateau, .monitor = monitor_}};
  }
  std::string monitor_;
};

/// Two optimizers, stepped by index.
struct TwoOptimizers : Mlp {
  OptimizerConfig configure_optimizers() override {
    OptimizerConfig config{std::make_shared<torch::optim::SGD>(net[0]->parameters(), torch::optim::SGDOptions(0.1)),
                           std::nullopt};
    config.more.push_back(
        {std::make_shared<torch::optim::SGD>(net[2]->parameters(), torch::optim::SGDOptions(0.1)), std::nullopt});
    return config;
  }
};

double lr_of(Fabric& fabric) {
  return static_cast<torch::optim::SGDOptions&>(fabric.optimizers().front().optimizer->param_groups()[0].options()).lr();
}

}  // namespace

TEST_CASE("Fabric: a ReduceLROnPlateau scheduler steps on its monitored value at end_epoch; a missing one throws") {
  TempDir dir("online-fabric-plateau");
  PlateauMlp model("flat");
  Fabric fabric(quiet_options(dir.path().string()));
  fabric.setup(model);
  const std::vector<Batch> batches = fixed_batches(2, 4);
  fabric.log("flat", 1.0);
  fabric.end_epoch();  // the first value is the best so far
  CHECK(lr_of(fabric) == doctest::Approx(0.1));
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const Batch& b : batches) fabric.training_step(b);
    fabric.log("flat", 1.0);  // no improvement: patience 0 halves the rate
    fabric.end_epoch();
  }
  CHECK(lr_of(fabric) == doctest::Approx(0.025));

  PlateauMlp unlogged("val_loss");
  Fabric second(quiet_options(dir.path().string()));
  second.setup(unlogged);
  second.training_step(batches[0]);
  const std::string error = error_of([&] { second.end_epoch(); });
  CHECK(error.find("[Fabric] ReduceLROnPlateau conditioned on metric 'val_loss', which is not available") == 0);
  CHECK(error.find("train_loss") != std::string::npos);  // what is available

  TwoOptimizers two;
  Fabric third(quiet_options(dir.path().string()));
  third.setup(two);
  CHECK(error_of([&] { third.training_step(batches[0]); }).find(
            "[Fabric::training_step] steps one optimizer, and configure_optimizers returned 2") == 0);
  const torch::Tensor first_before = two.net[0]->parameters()[0].clone();
  const torch::Tensor second_before = two.net[2]->parameters()[0].clone();
  third.backward(third.training_loss(batches[0]));
  third.optimizer_step(1);
  CHECK(torch::equal(two.net[0]->parameters()[0], first_before));  // optimizer 0 did not step
  CHECK(!torch::equal(two.net[2]->parameters()[0], second_before));
}

TEST_CASE("Fabric: a pipeline (model_parallel.pipeline_parallel_size 2) is refused in one line when it is made") {
  TempDir dir("fabric-pipeline");
  const std::string error = error_of([&] {
    Fabric fabric(quiet_options(dir.path().string())
                      .strategy(StrategyKind::ModelParallel)
                      .devices(2)
                      .model_parallel(ModelParallelOptions().pipeline_parallel_size(2)));
  });
  CHECK(error.find("[Fabric] model_parallel.pipeline_parallel_size 2: a pipeline runs a step's micro-batches itself") == 0);
}

TEST_CASE("Fabric: a load that fails (an optimizer that does not match) changes nothing: weights, step, predictions") {
  TempDir dir("online-fabric-failed-load");
  const std::vector<Batch> batches = fixed_batches(3, 4);
  Mlp adam;  // Adam: its checkpoint holds Adam's state
  Fabric writer(quiet_options(dir.path().string()));
  writer.setup(adam);
  for (const Batch& b : batches) writer.training_step(b);
  writer.save_checkpoint(dir / "adam.ckpt");

  PlateauMlp sgd("flat");  // the same weights' shapes, SGD
  Fabric reader(quiet_options(dir.path().string()));
  reader.setup(sgd);
  reader.training_step(batches[0]);
  const auto before = fulgur::state_dict(sgd);
  std::vector<torch::Tensor> weights;
  for (const auto& entry : before) weights.push_back(entry.value().clone());
  const std::string error = error_of([&] { reader.load_checkpoint(dir / "adam.ckpt"); });
  CHECK(error.find("[Fabric::load_checkpoint] " + (dir / "adam.ckpt").string()) == 0);
  CHECK(reader.global_step() == 1);  // not the checkpoint's 3
  size_t i = 0;
  for (const auto& entry : fulgur::state_dict(sgd)) {
    CAPTURE(entry.key());
    CHECK(torch::equal(entry.value(), weights[i++]));  // not Adam's weights
  }
  // And it trains on from where it was.
  CHECK_NOTHROW(reader.training_step(batches[1]));
  CHECK(reader.global_step() == 2);
}

TEST_CASE("Fabric: async_checkpoint saves in the background; the file holds the state at the save and loads back") {
  TempDir dir("online-fabric-async");
  const std::vector<Batch> batches = fixed_batches(6, 4);
  Mlp model;
  Fabric fabric(quiet_options(dir.path().string()).async_checkpoint(true));
  fabric.setup(model);
  for (size_t i = 0; i < 3; ++i) fabric.training_step(batches[i]);
  std::vector<torch::Tensor> at_save;
  for (const auto& entry : fulgur::state_dict(model)) at_save.push_back(entry.value().clone());
  fabric.save_checkpoint(dir / "async.ckpt");
  // The steps change the weights at once: the writer has its own copy.
  for (size_t i = 3; i < 6; ++i) fabric.training_step(batches[i]);
  fabric.load_checkpoint(dir / "async.ckpt");  // waits for the write first
  CHECK(fabric.global_step() == 3);
  size_t i = 0;
  for (const auto& entry : fulgur::state_dict(model)) {
    CAPTURE(entry.key());
    CHECK(torch::equal(entry.value(), at_save[i++]));
  }
  // Once the writer finished, the file is whole (its CRCs check) and holds the step of its save.
  fabric.training_step(batches[3]);
  fabric.save_checkpoint(dir / "async.ckpt");
  fabric.finish_checkpoint_writes();
  CHECK(CheckpointIO::load(dir / "async.ckpt").at("global_step").toInt() == 4);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);  // no half-written file left
  }
}

TEST_CASE("a checkpoint saved at step 4 and loaded into a fresh trainer continues exactly as without the stop") {
  TempDir dir("online-checkpoint");
  const std::vector<Batch> batches = fixed_batches(8, 4);
  torch::manual_seed(3);
  OnlineTrainer straight([] { return std::make_shared<Mlp>(); }, online_options(dir));
  for (size_t i = 0; i < 4; ++i) straight.train_step(batches[i].input, batches[i].target);
  straight.save_checkpoint(dir / "step4.ckpt");
  for (size_t i = 4; i < 8; ++i) straight.train_step(batches[i].input, batches[i].target);

  torch::manual_seed(99);  // other first weights: the checkpoint must replace them
  OnlineTrainer resumed([] { return std::make_shared<Mlp>(); }, online_options(dir));
  resumed.load_checkpoint(dir / "step4.ckpt");
  CHECK(resumed.global_step() == 4);
  CHECK(resumed.published_step() == 4);
  Mlp offline;  // a program that goes on with Trainer::fit starts from the same weights
  fulgur::load_checkpoint_weights(offline, dir / "step4.ckpt");
  CHECK(same_weights(offline, resumed.module()));
  for (size_t i = 4; i < 8; ++i) resumed.train_step(batches[i].input, batches[i].target);
  CHECK(same_weights(straight.module(), resumed.module()));  // Adam's moments came back too

  CHECK(error_of([&] { resumed.load_checkpoint(dir / "missing.ckpt"); }).find("missing.ckpt") != std::string::npos);
}

TEST_CASE("OnlineConfig: a YAML file describes the model, optimizer and options; bad keys are named") {
  const OnlineConfig config = OnlineConfig::from_yaml(
      "model: {type: cnn, layers: [1, 8, 1], kernel_size: 3}\n"
      "optimizer: {type: sgd, lr: 0.1, momentum: 0.9}\n"
      "online: {publish_every_n_steps: 4, num_threads: 1}\n"
      "stream: {capacity: 64, when_full: drop_oldest, batch_size: 8}\n"
      "trainer: {accelerator: cpu, gradient_clip_val: 1.0}\n",
      "inline.yaml");
  CHECK(config.model.type == "cnn");
  CHECK(config.model.layers == std::vector<int64_t>{1, 8, 1});
  CHECK(config.options.stream.when_full == WhenFull::DropOldest);
  CHECK(config.options.num_threads == 1);
  CHECK(config.options.trainer.gradient_clip_val() == 1.0);
  ConfiguredModel model(config.model);
  CHECK(model.forward(torch::zeros({2, 1, 5, 7})).sizes() == torch::IntArrayRef({2, 1, 5, 7}));

  CHECK(error_of([] { OnlineConfig::from_yaml("model: {type: mlp, layerz: [1]}\n", "a.yaml"); }) ==
        "a.yaml: model.layerz: unknown key");
  CHECK(error_of([] { OnlineConfig::from_yaml("modle: {}\n", "a.yaml"); }).rfind("a.yaml: modle: unknown key", 0) == 0);
  CHECK(error_of([] { OnlineConfig::from_yaml("trainer: {max_epoch: 3}\n", "a.yaml"); }).find("trainer.max_epoch") !=
        std::string::npos);
  CHECK(error_of([] { OnlineConfig::from_yaml("stream: {when_full: sometimes}\n", "a.yaml"); }) ==
        "a.yaml: stream.when_full: 'sometimes' is not one of block, drop_oldest, replay");
  CHECK(error_of([] { OnlineConfig::from_yaml("online: {on_nonfinite: ignore}\n", "a.yaml"); }) ==
        "a.yaml: online.on_nonfinite: 'ignore' is not one of stop, skip");
  const OnlineConfig more = OnlineConfig::from_yaml(
      "online: {on_nonfinite: skip, checkpoint_dir: ckpt, checkpoint_buffer: true, log_dir: logs}\n", "b.yaml");
  CHECK(more.options.on_nonfinite == OnNonFinite::Skip);
  CHECK(more.options.checkpoint_dir == "ckpt");
  CHECK(more.options.checkpoint_buffer);
  CHECK(more.log_dir == "logs");
  CHECK(error_of([] { ConfiguredModel(ModelSpec{.type = "torchscript", .path = "/nonexistent/net.pt"}); }) ==
        "model.path: TorchScript file '/nonexistent/net.pt' does not exist");
}

TEST_CASE("a TorchScript model written in Python trains and predicts from its YAML description") {
  TempDir dir("online-torchscript");
  const std::string script = (dir / "net.pt").string();
  const auto made = fulgur::testing::run_command(
      std::string(FULGUR_PYTHON) +
          " -c \"import torch; torch.manual_seed(0); "
          "m = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)); "
          "torch.jit.save(torch.jit.script(m), '" + script + "')\"",
      120);
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  OnlineConfig config = OnlineConfig::from_yaml(
      "model: {type: torchscript, path: " + script + "}\noptimizer: {type: adam, lr: 0.02}\n", "script.yaml");
  config.options.trainer = quiet_options(dir.path()).logger(false);
  OnlineTrainer online([&] { return std::make_shared<ConfiguredModel>(config.model); }, config.options);
  CHECK(online.module().parameters().size() == 4);  // the script's own tensors train
  torch::manual_seed(2);
  const torch::Tensor x = torch::rand({256, 2}) * 2 - 1;
  const torch::Tensor y = (x.select(1, 0) * x.select(1, 1) + x.select(1, 0).sin()).unsqueeze(1);
  const double before = torch::mse_loss(online.predict(x), y).item<double>();
  for (int i = 0; i < 200; ++i) online.train_step(x, y);
  online.publish();
  const double after = torch::mse_loss(online.predict(x), y).item<double>();
  MESSAGE("TorchScript MLP: mse " << before << " -> " << after);
  CHECK(after < before / 10);
}

TEST_CASE("a YAML file builds a C++ module registered by name; an unknown type lists the registered ones") {
  TempDir dir("online-registered");
  OnlineModelRegistry::add("online_test_twins", [] { return std::make_shared<Twins>(); });
  CHECK(error_of([] { OnlineModelRegistry::add("online_test_twins", [] { return std::make_shared<Twins>(); }); }) ==
        "[OnlineModelRegistry::add] 'online_test_twins' is registered already");
  CHECK(error_of([] { OnlineModelRegistry::add("mlp", [] { return std::make_shared<Twins>(); }); }) ==
        "[OnlineModelRegistry::add] 'mlp' is a built-in model type");
  const std::string config = (dir / "twins.yaml").string();
  std::ofstream(config) << "model: {type: online_test_twins}\ntrainer: {accelerator: cpu, enable_progress_bar: false}\n";
  {
    const std::unique_ptr<OnlineTrainer> trainer = OnlineConfig::from_yaml_file(config).make_trainer();
    CHECK(trainer->train_step(torch::zeros({4, 1}), torch::full({4, 1}, 2.0)) == 8.0);  // (0 - 2)^2 for a and for b: Twins' own training_step
  }

  std::ofstream(config) << "model: {type: nothing_like_it}\n";
  CHECK(error_of([&] { OnlineConfig::from_yaml_file(config).make_trainer(); }) ==
        "model.type: 'nothing_like_it' is not one of mlp, cnn, torchscript, online_test_twins");
}

TEST_CASE("checkpoint_buffer: the stream's samples travel with the checkpoint and refill a restarted replay buffer") {
  TempDir dir("online-buffer");
  OnlineOptions options = online_options(dir);
  options.stream = SampleStreamOptions{.capacity = 32, .when_full = WhenFull::Replay, .batch_size = 4, .seed = 5};
  options.checkpoint_buffer = true;
  const std::vector<Batch> batches = fixed_batches(3, 4);
  OnlineTrainer first([] { return std::make_shared<Mlp>(); }, options);
  for (const Batch& b : batches) first.push(b.input, b.target);
  first.save_checkpoint(dir / "with-buffer.ckpt");

  OnlineTrainer second([] { return std::make_shared<Mlp>(); }, options);
  second.load_checkpoint(dir / "with-buffer.ckpt");
  CHECK(second.stream().buffered() == 12);
  const auto [inputs, targets] = second.stream().buffered_samples();
  CHECK(torch::equal(inputs, torch::cat({batches[0].input, batches[1].input, batches[2].input})));
  CHECK(torch::equal(targets, torch::cat({batches[0].target, batches[1].target, batches[2].target})));

  options.checkpoint_buffer = false;  // the same file, the samples left out
  OnlineTrainer third([] { return std::make_shared<Mlp>(); }, options);
  third.load_checkpoint(dir / "with-buffer.ckpt");
  CHECK(third.stream().buffered() == 0);
}

}  // namespace online_test
