// Two hosts simulated with network namespaces (root only, as in CI): DDP
// across "nodes" with SLURM-style variables equals one process.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <doctest/doctest.h>

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

TEST_CASE("two nodes: 2 namespaces x 2 ranks over a veth pair equal one process") {
  TempDir dir("two-node");
  const auto result = run_command("bash " + std::string(FULGUR_SOURCE_DIR) + "/scripts/two_node_test.sh " +
                                      FULGUR_BINARY_DIR + " " + dir.path().string(),
                                  300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("two_node_test: 4 ranks on 2 namespaces finished") != std::string::npos);
  const torch::Tensor one = load_pickled_tensor(dir / "one.pt");
  const torch::Tensor four = load_pickled_tensor(dir / "four.pt");
  CHECK(torch::allclose(four, one, 1e-5, 1e-5));
  // Rank 2 ran on the second host: it must have reached the first one's store.
  CHECK(read_file(dir / "rank2.log").find("error") == std::string::npos);
}
