// A simulated cluster (scripts/sim_cluster.sh; root only, as in CI): nodes
// are network namespaces on a bridge, every node's link limited to 1 Gbit/s
// each way by tc tbf. DDP on 4 nodes x 1 rank and on 2 nodes x 2 ranks, and
// the Horovod-style ring and FSDP's FULL_SHARD and HYBRID_SHARD on 2 nodes
// x 2 ranks, train a model with 25 MB of gradients through those links and
// end equal to one process on the same global batch.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <unistd.h>

namespace sim_cluster_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kSim = "bash " + std::string(FULGUR_SOURCE_DIR) + "/scripts/sim_cluster.sh ";

// The cluster's namespaces live as long as this object.
struct SimCluster {
  SimCluster(int nodes, const std::string& rate) : name(fmt::format("t{}", ::getpid() % 1000000)) {
    const auto up = run_command(kSim + "up " + name + " " + std::to_string(nodes) + " " + rate, 60);
    INFO(up.output);
    REQUIRE(up.exit_code == 0);
  }
  ~SimCluster() { run_command(kSim + "down " + name, 60); }
  fulgur::testing::CommandResult run(int nodes, int per_node, const std::filesystem::path& logs,
                                     const std::string& command) const {
    return run_command(kSim + "run " + name + " " + std::to_string(nodes) + " " + std::to_string(per_node) + " " +
                           logs.string() + " -- " + command,
                       300);
  }
  int64_t sent(int node) const { return std::stoll(run_command(kSim + "sent " + name + " " + std::to_string(node)).output); }
  std::string name;
};

// 8 -> 1024, 6 x (1024 -> 1024), 1024 -> 4: 6.3 M parameters, 25.2 MB of fp32 gradients.
constexpr int64_t kGradientBytes = 4 * ((8 * 1024 + 1024) + 6 * (1024 * 1024 + 1024) + (1024 * 4 + 4));

std::string probe(const std::filesystem::path& output, const std::string& extra) {
  return std::string(FULGUR_BINARY_DIR) + "/bin/ddp_probe fit --seed_everything 7 --trainer.accelerator cpu " +
         "--trainer.max_epochs 1 --trainer.enable_progress_bar false --trainer.num_sanity_val_steps 0 " +
         "--trainer.limit_val_batches 0 --trainer.logger false --trainer.enable_checkpointing false " +
         "--trainer.enable_model_summary false --trainer.process_group_timeout 120 " +
         "--model.hidden 1024 --model.depth 6 --model.lr 0.02 --model.output " + output.string() + " " + extra;
}

}  // namespace

TEST_CASE("simulated cluster: DDP and the Horovod ring over 1 Gbit/s links equal one process") {
  TempDir dir("sim-cluster");
  // One process, global batch 16: 4 steps over the probe's 64 samples.
  const auto one = run_command(probe(dir / "one.pt", "--data.batch_size 16"), 300);
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const torch::Tensor reference = load_pickled_tensor(dir / "one.pt");

  SimCluster cluster(4, "1gbit");
  SUBCASE("DDP, 4 nodes x 1 rank") {
    const auto run = cluster.run(4, 1, dir / "ddp",
                                 probe(dir / "ddp.pt", "--trainer.num_nodes 4 --trainer.devices 1 --data.batch_size 4"));
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(torch::allclose(load_pickled_tensor(dir / "ddp.pt"), reference, 1e-5, 1e-5));
    // Every gradient crossed the limited links: a ring allreduce sends 2(N-1)/N of them per step from each node.
    CHECK(cluster.sent(1) >= 4 * kGradientBytes * 3 / 2);
  }
  SUBCASE("DDP, 2 nodes x 2 ranks") {
    const auto run = cluster.run(2, 2, dir / "ddp22",
                                 probe(dir / "ddp22.pt", "--trainer.num_nodes 2 --trainer.devices 2 --data.batch_size 4"));
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(torch::allclose(load_pickled_tensor(dir / "ddp22.pt"), reference, 1e-5, 1e-5));
    // Rank 2 runs on the second node: it reached the store on the first one.
    CHECK(read_file(dir / "ddp22" / "rank2.log").find("error") == std::string::npos);
    CHECK(cluster.sent(1) >= 4 * kGradientBytes * 3 / 2);
  }
  SUBCASE("Horovod ring with fusion, 2 nodes x 2 ranks") {
    const auto run = cluster.run(2, 2, dir / "horovod",
                                 probe(dir / "horovod.pt", "--trainer.num_nodes 2 --trainer.devices 2 "
                                                           "--trainer.strategy horovod --data.batch_size 4"));
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(torch::allclose(load_pickled_tensor(dir / "horovod.pt"), reference, 1e-5, 1e-5));
    // Ranks 0,1 on node 0 and 2,3 on node 1: the ring crosses each node's link once per direction.
    CHECK(cluster.sent(1) >= 4 * kGradientBytes * 3 / 2);
  }
  SUBCASE("FSDP HYBRID_SHARD against FULL_SHARD, 2 nodes x 2 ranks") {
    const std::string two_by_two = "--trainer.num_nodes 2 --trainer.devices 2 --data.batch_size 4 --trainer.strategy "
                                   "fsdp --trainer.fsdp.sharding_strategy ";
    const auto full = cluster.run(2, 2, dir / "full", probe(dir / "full.pt", two_by_two + "FULL_SHARD"));
    INFO(full.output);
    REQUIRE(full.exit_code == 0);
    const int64_t full_sent = cluster.sent(1);
    const auto hybrid = cluster.run(2, 2, dir / "hybrid", probe(dir / "hybrid.pt", two_by_two + "HYBRID_SHARD"));
    INFO(hybrid.output);
    REQUIRE(hybrid.exit_code == 0);
    const int64_t hybrid_sent = cluster.sent(1) - full_sent;
    CHECK(torch::allclose(load_pickled_tensor(dir / "full.pt"), reference, 1e-5, 1e-5));
    CHECK(torch::allclose(load_pickled_tensor(dir / "hybrid.pt"), reference, 1e-5, 1e-5));
    // Across the nodes FULL_SHARD gathers parameters and scatters gradients;
    // HYBRID_SHARD only averages each node's gradient shards with the other node's.
    MESSAGE("bytes node 1 sent: FULL_SHARD " << full_sent << ", HYBRID_SHARD " << hybrid_sent);
    CHECK(hybrid_sent >= 4 * kGradientBytes / 2);
    CHECK(hybrid_sent * 10 < full_sent * 7);
  }
}

}  // namespace sim_cluster_test
