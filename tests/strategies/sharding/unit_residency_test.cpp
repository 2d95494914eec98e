// fulgur::UnitResidency: whether each unit of a ShardLayout is whole or a
// shard, and the all-gathers between (over a process group of one, whose
// "shard" is every row). The ShardedReducer case checks the two together
// as FSDP's FULL_SHARD uses them in a step.
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/sharding/shard_layout.hpp>
#include <fulgur/strategies/sharding/sharded_reducer.hpp>
#include <fulgur/strategies/sharding/unit_residency.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

namespace unit_residency_test {

namespace {

/// A group of one on any free port: enough to gather and reduce.
fulgur::ProcessGroupOptions lone_group() {
  fulgur::ProcessGroupOptions options;
  options.main_port = 0;
  return options;
}

/// Two layers, each a unit of its own, laid out over `world` ranks as rank 0,
/// and a group of one (where `world` is 1, enough to gather and reduce).
struct TwoUnits {
  fulgur::ProcessGroup group{lone_group()};
  torch::nn::Sequential net{torch::nn::Linear(4, 3), torch::nn::Linear(3, 2)};
  std::vector<torch::Tensor> params;
  std::unique_ptr<fulgur::ShardLayout> layout;
  size_t u0 = 0, u1 = 0;
  explicit TwoUnits(int64_t world = 1) {
    std::vector<std::string> names;
    for (const auto& item : net->named_parameters()) {
      names.push_back(item.key());
      params.push_back(item.value());
    }
    layout = std::make_unique<fulgur::ShardLayout>(params, names, world, 0, std::vector<std::string>{"0", "1"}, 1000000);
    u0 = *layout->unit_of_module("0");
    u1 = *layout->unit_of_module("1");
  }
};

}  // namespace

TEST_CASE("unit_residency: FULL_SHARD gathers and frees one unit at a time and counts the most whole at once") {
  TwoUnits model;
  const size_t u0 = model.u0, u1 = model.u1;
  const torch::Tensor first = model.params[0].detach().clone();
  fulgur::UnitResidency residency(*model.layout, model.group, /*reshard=*/true);
  CHECK(residency.reshards());
  CHECK(residency.sharded(u0));
  CHECK(residency.sharded(u1));
  CHECK(residency.holds_shard(model.params[0]));
  CHECK(residency.peak_whole_units() == 0);

  residency.unshard_unit(u0);
  CHECK_FALSE(residency.sharded(u0));
  CHECK(residency.sharded(u1));
  CHECK_FALSE(residency.holds_shard(model.params[0]));
  CHECK(torch::equal(model.params[0].detach(), first));
  CHECK(residency.peak_whole_units() == 1);

  residency.free_unit(u0);
  CHECK(residency.sharded(u0));
  residency.unshard_all();
  CHECK_FALSE(residency.sharded(u0));
  CHECK_FALSE(residency.sharded(u1));
  CHECK(residency.peak_whole_units() == 2);
  CHECK(torch::equal(model.params[0].detach(), first));

  residency.reshard();
  CHECK(residency.sharded(u0));
  CHECK(residency.sharded(u1));
}

TEST_CASE("unit_residency: a unit whose forward gathers it is left to that forward by unshard()") {
  TwoUnits model;
  const size_t u0 = model.u0, u1 = model.u1;
  fulgur::UnitResidency residency(*model.layout, model.group, /*reshard=*/true);
  residency.set_forward_gathered(u0);
  CHECK(residency.forward_gathered(u0));
  CHECK_FALSE(residency.forward_gathered(u1));
  residency.unshard();
  CHECK(residency.sharded(u0));
  CHECK_FALSE(residency.sharded(u1));
}

TEST_CASE("unit_residency: SHARD_GRAD_OP shards are views of whole values, and an error mid-step leaves them whole") {
  // Rank 0 of two (no collective runs here): the first weight's 3 rows are 2 + 1.
  TwoUnits model(2);
  const size_t u0 = model.u0;
  const torch::Tensor before = model.params[0].detach().clone();
  {
    fulgur::UnitResidency residency(*model.layout, model.group, /*reshard=*/false);
    CHECK_FALSE(residency.reshards());
    CHECK_FALSE(residency.holds_shard(model.params[0]));
    CHECK(model.params[0].sizes() == c10::IntArrayRef{3, 4});
    residency.become_shards(u0);
    CHECK(residency.holds_shard(model.params[0]));
    CHECK_FALSE(residency.holds_shard(model.params[2]));
    CHECK(model.params[0].sizes() == c10::IntArrayRef{2, 4});
    CHECK(torch::equal(model.params[0].detach(), before.narrow(0, 0, 2)));
    // FULL_SHARD's calls do nothing here: whole values never go.
    residency.unshard_unit(u0);
    CHECK(residency.sharded(u0));
  }  // destroyed while unit 0 is a shard, as by an exception in the step
  CHECK(model.params[0].sizes() == c10::IntArrayRef{3, 4});
  CHECK(torch::equal(model.params[0].detach(), before));
}

TEST_CASE("unit_residency: whole_of gathers a parameter by its unit's state and returns other tensors as they are") {
  TwoUnits model;
  fulgur::UnitResidency residency(*model.layout, model.group, /*reshard=*/true);
  const torch::Tensor& weight = model.params[0];
  // Sharded: gathered into a new tensor of the whole shape.
  const torch::Tensor gathered = residency.whole_of(weight, weight);
  CHECK(gathered.sizes() == weight.sizes());
  CHECK(torch::equal(gathered, weight.detach()));
  // A moment shaped like the shard is gathered too; a stranger is returned as it is.
  const torch::Tensor moment = torch::full_like(weight.detach(), 3.0);
  CHECK(torch::equal(residency.whole_of(weight, moment), moment));
  const torch::Tensor stranger = torch::ones({5});
  CHECK(residency.whole_of(weight, stranger).data_ptr() == stranger.data_ptr());
  CHECK(residency.whole_of(torch::ones({4, 3}), weight).data_ptr() == weight.data_ptr());
}

TEST_CASE("unit_residency: FULL_SHARD parameters are whole from unshard to the end of backward, rows of their own between") {
  fulgur::ProcessGroup group(lone_group());
  torch::nn::Linear layer(4, 3);
  const torch::Tensor before = layer->weight.detach().clone();
  const fulgur::ShardLayout layout({layer->weight, layer->bias}, {"weight", "bias"}, 1, 0, {}, 1000000);
  fulgur::UnitResidency residency(layout, group, /*reshard=*/true);
  fulgur::ShardedReducer reducer(layout, residency, group, fulgur::ShardedReducer::Options());
  CHECK(residency.holds_shard(layer->weight));
  residency.unshard();
  CHECK_FALSE(residency.holds_shard(layer->weight));
  CHECK(torch::equal(layer->weight.detach(), before));
  reducer.prepare(true);
  layer->forward(torch::ones({2, 4})).sum().backward();
  reducer.finish();
  CHECK(residency.holds_shard(layer->weight));
  // A group of one: the "shard" is every row, the gradient its mean over one rank.
  CHECK(torch::allclose(layer->weight.grad(), torch::full({3, 4}, 2.0)));
  CHECK(reducer.held_tensors().size() == 1);
}

}  // namespace unit_residency_test
