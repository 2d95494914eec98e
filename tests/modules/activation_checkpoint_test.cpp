// fulgur::checkpoint and ShardedUnit's activation checkpointing: the node
// keeps only its inputs (its graph goes straight to them and to the
// parameters), and the recomputation in backward gives the plain run's
// gradients, with dropout (the same masks) and under autocast; the
// Trainer's option turns it on for every unit (its gradients under single,
// ddp and fsdp are in example_transformer_lm_test).
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/modules/activation_checkpoint.hpp>
#include <fulgur/strategies/sharding/sharded_unit.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace activation_checkpoint_test {

namespace {

/// Linear, GELU, dropout, Linear, plus a residual: intermediates worth not keeping.
struct BlockImpl : torch::nn::Module {
  BlockImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 8));
    drop = register_module("drop", torch::nn::Dropout(0.3));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return x + fc2->forward(drop->forward(torch::gelu(fc1->forward(x))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Block);

/// A tuple out: not something checkpoint() can hand back.
struct PairImpl : torch::nn::Module {
  PairImpl() { fc = register_module("fc", torch::nn::Linear(2, 2)); }
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x) { return {fc->forward(x), x}; }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Pair);

using Units = torch::nn::Sequential;

/// Two blocks in ShardedUnits, the same initial weights for every `seed`.
Units make_units(uint64_t seed, bool checkpointing) {
  torch::manual_seed(seed);
  Units units;
  for (int i = 0; i < 2; ++i) {
    fulgur::ShardedUnit<Block> unit{Block()};
    unit->set_activation_checkpointing(checkpointing);
    units->push_back(unit);
  }
  return units;
}

/// The loss's gradients for every parameter, after one forward with the RNG at `seed`.
std::vector<torch::Tensor> gradients(Units& units, const torch::Tensor& x, uint64_t seed) {
  units->zero_grad();
  torch::manual_seed(seed);
  units->forward(x).pow(2).mean().backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : units->parameters()) grads.push_back(p.grad().clone());
  return grads;
}

}  // namespace

TEST_CASE("checkpoint: the node goes straight to the inputs and parameters, and gives the plain gradients") {
  torch::manual_seed(0);
  torch::nn::Linear fc1(6, 16), fc2(16, 6);
  const auto forward = [&](const std::vector<torch::Tensor>& in) {
    return std::vector<torch::Tensor>{fc2->forward(torch::tanh(fc1->forward(in[0]))) * in[1]};
  };
  std::vector<torch::Tensor> params = fc1->parameters();
  for (const auto& p : fc2->parameters()) params.push_back(p);
  const torch::Tensor x = torch::randn({5, 6}, torch::requires_grad());
  const torch::Tensor scale = torch::randn({5, 6});  // needs no gradient

  const torch::Tensor plain = forward({x, scale})[0];
  plain.sum().backward();
  std::vector<torch::Tensor> expected{x.grad().clone()};
  for (const auto& p : params) expected.push_back(p.grad().clone());
  x.mutable_grad().reset();
  for (auto& p : params) p.mutable_grad().reset();

  const torch::Tensor out = fulgur::checkpoint(forward, {x, scale}, params)[0];
  CHECK(torch::equal(out, plain));
  // One node between the output and the leaves: no intermediate (tanh, matmul) is kept.
  const auto& edges = out.grad_fn()->next_edges();
  REQUIRE(edges.size() == 2 + params.size());
  CHECK(edges[0].function == torch::autograd::impl::gradient_edge(x).function);
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(edges[2 + i].function == torch::autograd::impl::gradient_edge(params[i]).function);
  }
  out.sum().backward();
  CHECK(torch::allclose(x.grad(), expected[0]));
  for (size_t i = 0; i < params.size(); ++i) CHECK(torch::allclose(params[i].grad(), expected[1 + i]));

  // Without grad mode (evaluation) it is the forward itself.
  torch::NoGradGuard no_grad;
  const torch::Tensor eval = fulgur::checkpoint(forward, {x, scale}, params)[0];
  CHECK(!eval.requires_grad());
  CHECK(torch::equal(eval, plain.detach()));
}

TEST_CASE("ShardedUnit with activation checkpointing: the plain run's gradients, dropout and autocast included") {
  // The first unit's input needs no gradient: its parameters still get theirs.
  const torch::Tensor x = torch::randn({4, 8});
  Units plain = make_units(11, false);
  Units checkpointed = make_units(11, true);
  const auto expected = gradients(plain, x, 5);
  const auto got = gradients(checkpointed, x, 5);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(torch::allclose(got[i], expected[i], 1e-6, 1e-7));
  // Dropout draws its masks from the generator: another seed changes them, so the
  // equality above holds only because the recomputation replays the same draws.
  CHECK(!torch::allclose(gradients(plain, x, 6)[0], expected[0]));

  // The recomputation runs under the first run's autocast (bfloat16 on the CPU).
  auto under_autocast = [&](Units& units) {
    at::autocast::set_autocast_enabled(c10::DeviceType::CPU, true);
    at::autocast::set_autocast_dtype(c10::DeviceType::CPU, torch::kBFloat16);
    auto grads = gradients(units, x, 5);
    at::autocast::set_autocast_enabled(c10::DeviceType::CPU, false);
    at::autocast::clear_cache();
    return grads;
  };
  const auto bf16_plain = under_autocast(plain);
  const auto bf16_checkpointed = under_autocast(checkpointed);
  for (size_t i = 0; i < got.size(); ++i) CHECK(torch::allclose(bf16_checkpointed[i], bf16_plain[i], 1e-6, 1e-7));
  CHECK(!torch::allclose(bf16_plain[0], expected[0], 1e-6, 1e-7));  // bf16 did change them

  // Evaluation keeps no graph either way.
  torch::NoGradGuard no_grad;
  CHECK(!checkpointed->forward(x).requires_grad());
}

TEST_CASE("ShardedUnit: activation checkpointing of a forward that returns no single tensor says so") {
  fulgur::ShardedUnit<Pair> unit{Pair()};
  CHECK_NOTHROW(unit(torch::randn({1, 2})));
  unit->set_activation_checkpointing(true);
  CHECK_THROWS_WITH_AS(unit(torch::randn({1, 2})),
                       "[ShardedUnit] activation checkpointing needs a forward that takes tensors and returns one "
                       "tensor",
                       std::logic_error);
}

TEST_CASE("Trainer option activation_checkpointing: every ShardedUnit's forward is checkpointed in training") {
  fulgur::testing::TempDir dir("activation-checkpointing-option");
  struct Model : fulgur::testing::RecordingModule {
    Model() : RecordingModule(8) { unit = register_module("unit", fulgur::ShardedUnit<Block>(Block())); }
    torch::Tensor training_step(const fulgur::Batch& batch, int64_t) override {
      const torch::Tensor y = unit(batch.input);
      nodes.push_back(y.grad_fn()->name());
      return torch::mse_loss(linear->forward(y).squeeze(1), batch.target);
    }
    fulgur::ShardedUnit<Block> unit{nullptr};
    std::vector<std::string> nodes;
  };
  for (const bool on : {false, true}) {
    CAPTURE(on);
    Model model;
    fulgur::testing::ResizableRegressionData data(16, 8, 8);
    fulgur::Trainer trainer(fulgur::testing::quiet_options(dir.path().string())
                                .max_steps(2)
                                .logger(false)
                                .enable_checkpointing(false)
                                .activation_checkpointing(on));
    trainer.fit(model, data);
    CHECK(model.unit->activation_checkpointing() == on);
    REQUIRE(model.nodes.size() == 2);
    for (const auto& node : model.nodes) CHECK((node.find("CheckpointFunction") != std::string::npos) == on);
  }
  // A module without units has nothing to recompute: one line says so.
  fulgur::testing::RecordingModule plain;
  fulgur::testing::ResizableRegressionData data(16, 8);
  fulgur::Trainer trainer(fulgur::testing::quiet_options(dir.path().string())
                              .max_steps(1)
                              .logger(false)
                              .enable_checkpointing(false)
                              .activation_checkpointing(true));
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  trainer.fit(plain, data);
  std::cerr.rdbuf(old);
  CHECK(err.str().find("warning: activation_checkpointing: the module has no fulgur::ShardedUnit") !=
        std::string::npos);
}

}  // namespace activation_checkpoint_test
