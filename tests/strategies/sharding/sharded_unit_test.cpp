// fulgur::ShardedUnit: the wrapper FSDP gathers a unit by. Its forward has
// the wrapped module's own signature (several inputs, a tuple out, or one
// tensor inside a Sequential), runs the strategy's hooks around it, and
// hands them every tensor of the result.
#include <fulgur/strategies/sharding/sharded_unit.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace sharded_unit_test {

namespace {

/// Records what a strategy's hooks would see.
struct RecordingHooks : fulgur::ShardedUnitHooks {
  void before_forward(const torch::nn::Module& unit) override { calls.push_back("before " + unit.name()); }
  void after_forward(const torch::nn::Module& unit, const std::vector<torch::Tensor>& outputs) override {
    calls.push_back("after " + unit.name() + " " + std::to_string(outputs.size()));
    seen = outputs;
  }
  std::vector<std::string> calls;
  std::vector<torch::Tensor> seen;
};

/// Two inputs (one with a meaning of its own), two outputs.
struct MaskedBlockImpl : torch::nn::Module {
  MaskedBlockImpl() { fc = register_module("fc", torch::nn::Linear(4, 4)); }
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const torch::Tensor y = fc->forward(x) * mask;
    return {y, y.sum()};
  }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(MaskedBlock);

/// A result with no tensor the hooks can see.
struct CountingImpl : torch::nn::Module {
  CountingImpl() { w = register_parameter("w", torch::ones({2})); }
  int64_t forward(torch::Tensor x) const { return x.numel(); }
  torch::Tensor w;
};
TORCH_MODULE(Counting);

}  // namespace

TEST_CASE("ShardedUnit: a forward of several inputs and a tuple runs between the hooks, which see both outputs") {
  torch::manual_seed(3);
  MaskedBlock inner;
  fulgur::ShardedUnit<MaskedBlock> unit(inner);
  const torch::Tensor x = torch::randn({3, 4});
  const torch::Tensor mask = torch::tensor({1.0, 0.0, 1.0, 1.0});
  const auto [plain_y, plain_sum] = inner->forward(x, mask);

  // Without hooks (any strategy but FULL_SHARD) it is the module itself.
  const auto [y, sum] = unit(x, mask);
  CHECK(torch::equal(y, plain_y));
  CHECK(torch::equal(sum, plain_sum));

  RecordingHooks hooks;
  unit->set_sharded_unit_hooks(&hooks);
  const auto [hooked_y, hooked_sum] = unit->forward(x, mask);
  CHECK(torch::equal(hooked_y, plain_y));
  REQUIRE(hooks.calls.size() == 2);
  CHECK(hooks.calls[0].rfind("before ", 0) == 0);
  CHECK(hooks.calls[1].find(" 2") != std::string::npos);
  REQUIRE(hooks.seen.size() == 2);
  CHECK(hooks.seen[0].is_same(hooked_y));
  CHECK(hooks.seen[1].is_same(hooked_sum));
  // The parameters are the wrapped module's, under "module.".
  CHECK(unit->named_parameters().contains("module.fc.weight"));
}

TEST_CASE("ShardedUnit: one tensor in and out goes into a Sequential; a result without tensors gives the hooks none") {
  RecordingHooks hooks;
  fulgur::ShardedUnit<torch::nn::Linear> linear(torch::nn::Linear(4, 2));
  linear->set_sharded_unit_hooks(&hooks);
  torch::nn::Sequential net(linear, torch::nn::ReLU());
  const torch::Tensor out = net->forward(torch::ones({5, 4}));
  CHECK(out.sizes() == torch::IntArrayRef({5, 2}));
  REQUIRE(hooks.calls.size() == 2);
  CHECK(hooks.calls[1].find(" 1") != std::string::npos);

  hooks.calls.clear();
  fulgur::ShardedUnit<Counting> counting(Counting{});
  counting->set_sharded_unit_hooks(&hooks);
  CHECK(counting(torch::ones({3, 2})) == 6);
  REQUIRE(hooks.calls.size() == 2);
  CHECK(hooks.calls[1].find(" 0") != std::string::npos);
}

}  // namespace sharded_unit_test
