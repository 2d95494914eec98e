// fulgur::ShardLayout: which rows of every parameter a rank holds and how
// parameters group into units (FSDP's wrap policy). Metadata only, so ranks
// of a larger world are laid out here without a process group.
#include <fulgur/strategies/sharding/shard_layout.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace shard_layout_test {

namespace {

/// Three linear layers, their parameters and names as a strategy sees them.
struct Net {
  torch::nn::Sequential net{torch::nn::Linear(10, 10), torch::nn::Linear(10, 10), torch::nn::Linear(10, 3)};
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  Net() {
    for (const auto& item : net->named_parameters()) {
      names.push_back(item.key());
      params.push_back(item.value());
    }
  }
};

}  // namespace

TEST_CASE("shard_layout: the wrap policy groups parameters into units by size at module boundaries and by name") {
  Net n;
  {
    // A Linear(10, 10) is 110: one unit each, never split inside a module.
    const fulgur::ShardLayout layout(n.params, n.names, 1, 0, {}, 100);
    const auto units = layout.unit_parameter_names();
    REQUIRE(units.size() == 3);
    // Launch order: the last layers first, as backward produces them.
    CHECK(units[0] == std::vector<std::string>{"2.weight", "2.bias"});
    CHECK(units[2] == std::vector<std::string>{"0.weight", "0.bias"});
    CHECK(layout.largest_unit_numel() == 110);
  }
  {
    const fulgur::ShardLayout layout(n.params, n.names, 1, 0, {"1"}, 1000000);
    const auto units = layout.unit_parameter_names();
    REQUIRE(units.size() == 2);
    CHECK(units[0] == std::vector<std::string>{"1.weight", "1.bias"});
    CHECK(units[1] == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    CHECK(layout.unit_of_module("1") == 0u);
    CHECK_FALSE(layout.unit_of_module("0").has_value());
  }
  CHECK_THROWS_WITH_AS(fulgur::ShardLayout(n.params, n.names, 1, 0, {"7"}, 100),
                       doctest::Contains("'7' names no submodule"), std::invalid_argument);
}

TEST_CASE("shard_layout: each rank of a world holds its own ceil(rows / world) rows, the last ones fewer") {
  Net n;
  // The head's weight is 3 x 10 over 2 ranks: chunks of 2 rows, rank 1 holds one.
  const torch::Tensor head = n.params[4];
  REQUIRE(n.names[4] == "2.weight");
  const torch::Tensor whole = torch::arange(30, torch::kFloat).reshape({3, 10});
  for (int64_t rank : {0, 1}) {
    const fulgur::ShardLayout layout(n.params, n.names, 2, rank, {}, 100);
    CHECK(layout.world() == 2);
    CHECK(layout.rank() == rank);
    CHECK(layout.local_rows(head) == (rank == 0 ? 2 : 1));
    CHECK(layout.whole_shape(head) == std::vector<int64_t>{3, 10});
    const torch::Tensor rows = layout.shard_of(head, whole);
    CHECK(torch::equal(rows, whole.narrow(0, 2 * rank, rank == 0 ? 2 : 1)));
    // A copy: the shard is not a view of the whole value.
    CHECK(rows.data_ptr() != whole.data_ptr());
    // Padded per-rank chunks: every rank's unit chunk has the same size.
    const auto& unit = layout.units()[layout.params()[4].unit];
    CHECK(unit.chunk_numel == 2 * 10 + 2 * 1);  // two rows of the weight, two of the bias
  }
  // Not a parameter of the layout, or not shaped like one: returned as it is.
  const fulgur::ShardLayout layout(n.params, n.names, 2, 1, {}, 100);
  const torch::Tensor other = torch::ones({4});
  CHECK_FALSE(layout.find(other).has_value());
  CHECK(layout.shard_of(other, other).data_ptr() == other.data_ptr());
  CHECK(layout.shard_of(head, other).data_ptr() == other.data_ptr());
}

TEST_CASE("shard_layout: parameters without gradients stay whole and are not listed") {
  Net n;
  n.params[0].set_requires_grad(false);
  const fulgur::ShardLayout layout(n.params, n.names, 2, 0, {}, 100);
  CHECK(layout.params().size() == 5);
  CHECK_FALSE(layout.find(n.params[0]).has_value());
  CHECK_FALSE(layout.whole_shape(n.params[0]).has_value());
  CHECK(layout.find(n.params[1]) == 0u);
}

TEST_CASE("shard_layout: fill_padded writes scaled values first and zeros after them") {
  torch::Tensor region = torch::full({5}, 7.0, torch::kFloat);
  fulgur::ShardLayout::fill_padded(region, torch::tensor({1.0, 2.0, 3.0}, torch::kFloat), 0.5);
  CHECK(torch::equal(region, torch::tensor({0.5, 1.0, 1.5, 0.0, 0.0}, torch::kFloat)));
  fulgur::ShardLayout::fill_padded(region, torch::Tensor());
  CHECK(torch::equal(region, torch::zeros({5}, torch::kFloat)));
}

}  // namespace shard_layout_test
