// A simulated cluster (scripts/sim_cluster.sh; root only, as in CI): nodes
// are network namespaces on a bridge, every node's link limited to 1 Gbit/s
// each way by tc tbf. DDP on 4 nodes x 1 rank and on 2 nodes x 2 ranks, and
// the Horovod-style ring and FSDP's FULL_SHARD and HYBRID_SHARD on 2 nodes
// x 2 ranks, train a model with 25 MB of gradients through those links and
// end equal to one process on the same global batch; so does DDP over MPI
// (process_group_backend mpi, started by Open MPI's mpirun across the nodes).
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
  /// `launcher`: "run" (the ranks with srun's variables) or "mpirun".
  fulgur::testing::CommandResult run(const std::string& launcher, int nodes, int per_node,
                                     const std::filesystem::path& logs, const std::string& command) const {
    return run_command(kSim + launcher + " " + name + " " + std::to_string(nodes) + " " + std::to_string(per_node) +
                           " " + logs.string() + " -- " + command,
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

  // One cluster for every run (setting it up costs as much as a run); each
  // run returns the bytes node 1 sent during it.
  SimCluster cluster(4, "1gbit");
  auto run = [&](const std::string& name, int nodes, int per_node, const std::string& extra,
                 const std::string& launcher = "run") {
    const int64_t before = cluster.sent(1);
    const auto result = cluster.run(launcher, nodes, per_node, dir / name,
                                    probe(dir / (name + ".pt"), fmt::format("--trainer.num_nodes {} --trainer.devices {} "
                                                                            "--data.batch_size 4 {}",
                                                                            nodes, per_node, extra)));
    INFO(name << ": " << result.output);
    REQUIRE(result.exit_code == 0);
    CHECK(torch::allclose(load_pickled_tensor(dir / (name + ".pt")), reference, 1e-5, 1e-5));
    return cluster.sent(1) - before;
  };
  // Every gradient crossed the limited links: a ring allreduce sends 2(N-1)/N of them per step from each node.
  CHECK(run("ddp", 4, 1, "") >= 4 * kGradientBytes * 3 / 2);
  CHECK(run("ddp22", 2, 2, "") >= 4 * kGradientBytes * 3 / 2);
  // Rank 2 runs on the second node: it reached the store on the first one.
  CHECK(read_file(dir / "ddp22" / "rank2.log").find("error") == std::string::npos);
  // Horovod's ring with fusion: ranks 0,1 on node 0 and 2,3 on node 1, so
  // the ring crosses each node's link once per direction.
  CHECK(run("horovod", 2, 2, "--trainer.strategy horovod") >= 4 * kGradientBytes * 3 / 2);
  // The same over MPI: no rendezvous, MPI's own transport between the nodes (TCP over the limited links).
  CHECK(run("mpi22", 2, 2, "--trainer.process_group_backend mpi", "mpirun") >= 4 * kGradientBytes * 3 / 2);

  // Across the nodes FULL_SHARD gathers parameters and scatters gradients;
  // HYBRID_SHARD only averages each node's gradient shards with the other node's.
  const int64_t full_sent = run("full", 2, 2, "--trainer.strategy fsdp --trainer.fsdp.sharding_strategy FULL_SHARD");
  const int64_t hybrid_sent =
      run("hybrid", 2, 2, "--trainer.strategy fsdp --trainer.fsdp.sharding_strategy HYBRID_SHARD");
  MESSAGE("bytes node 1 sent: FULL_SHARD " << full_sent << ", HYBRID_SHARD " << hybrid_sent);
  CHECK(hybrid_sent >= 4 * kGradientBytes / 2);
  CHECK(hybrid_sent * 10 < full_sent * 7);
}

}  // namespace sim_cluster_test
