// The online layer over a program's own ranks: real mpirun (Open MPI), the
// rendezvous on a FileStore in the test's folder (no port to share).
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>

#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <utility>

#include <doctest/doctest.h>

namespace online_mpirun_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = fulgur::testing::probe_program("online_probe");

/// Runs `online_probe mode` on `ranks` processes (1: without mpirun) and
/// returns rank 0's final parameters.
torch::Tensor run_probe(const TempDir& dir, const std::string& mode, int ranks) {
  const std::string name = mode + "-" + std::to_string(ranks);
  const std::string output = (dir / (name + ".pt")).string();
  const std::string command =
      ranks == 1 ? kProbe + " " + mode + " " + output
                 : "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) +
                       " -x FULGUR_FILE_STORE=" + (dir / ("store-" + name)).string() + " " + kProbe + " " + mode +
                       " " + output;
  const auto result = run_command(command, 300);
  INFO(command);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return load_pickled_tensor(output);
}

}  // namespace

TEST_CASE("inline mode: 2 ranks under mpirun equal 1 rank on the same global stream") {
  TempDir dir("online-mpirun-inline");
  const torch::Tensor one = run_probe(dir, "inline", 1);
  const torch::Tensor two = run_probe(dir, "inline", 2);
  CHECK(one.numel() == 4 * 16 + 16 + 16 * 2 + 2);
  CHECK(torch::allclose(two, one, 1e-6, 1e-6));
  CHECK_FALSE(torch::allclose(one, torch::zeros_like(one)));
}

TEST_CASE("a NaN on one of 2 ranks: both stop at that step at once, no step taken, weights finite") {
  TempDir dir("online-mpirun-nan");
  const std::string output = (dir / "nan.pt").string();
  const std::string command = "mpirun --allow-run-as-root --oversubscribe -np 2 -x FULGUR_FILE_STORE=" +
                              (dir / "store").string() + " " + kProbe + " nan " + output;
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_command(command, 300);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // Rank 1 names its loss; rank 0 learns of it in the same step (its gradients, averaged with rank 1's).
  CHECK(result.output.find("rank 1 stopped at step 3: [OnlineTrainer] the loss of step 4 is nan on rank 1: no step "
                           "was taken") != std::string::npos);
  CHECK(result.output.find("rank 0 stopped at step 3: [OnlineTrainer] ") != std::string::npos);
  CHECK(result.output.find("trained on") == std::string::npos);
  // Far inside the probe's 60 s process-group timeout: nobody waited for a peer.
  CHECK(seconds < 45.0);
  const torch::Tensor weights = load_pickled_tensor(output);
  CHECK(torch::isfinite(weights).all().item<bool>());
}

TEST_CASE("inline mode under horovod (ring allreduce): 2 ranks under mpirun equal 1 rank") {
  TempDir dir("online-mpirun-horovod");
  CHECK(torch::allclose(run_probe(dir, "horovod", 2), run_probe(dir, "inline", 1), 1e-6, 1e-6));
}

TEST_CASE("inline mode under fsdp SHARD_GRAD_OP and FULL_SHARD: 2 ranks equal 1 rank; predict() runs whole weights") {
  TempDir dir("online-mpirun-fsdp");
  const torch::Tensor one = run_probe(dir, "inline", 1);
  CHECK(torch::allclose(run_probe(dir, "fsdp", 2), one, 1e-6, 1e-6));
  // FULL_SHARD: each rank holds its rows of the parameters between steps; publishing gathers them.
  CHECK(torch::allclose(run_probe(dir, "fsdp_full", 2), one, 1e-6, 1e-6));
  CHECK(torch::allclose(load_pickled_tensor((dir / "fsdp_full-2.pt.predict").string()),
                        load_pickled_tensor((dir / "inline-1.pt.predict").string()), 1e-6, 1e-6));
}

TEST_CASE("Fabric with ddp on 2 ranks ends at fit's weights (fit over a stream, same ranks, same batches)") {
  TempDir dir("online-mpirun-fabric");
  const torch::Tensor fabric = run_probe(dir, "fabric", 2);
  const torch::Tensor fit = run_probe(dir, "fit", 2);
  CHECK(torch::equal(fabric, fit));
  // and the 2-rank run equals one process on the whole batches
  CHECK(torch::allclose(fabric, run_probe(dir, "fabric", 1), 1e-6, 1e-6));
}

TEST_CASE("Fabric under fsdp saves a sharded checkpoint on 2 ranks; loaded back, training ends where it did") {
  TempDir dir("online-mpirun-fabric-sharded");
  const torch::Tensor two = run_probe(dir, "fabric_sharded", 2);
  const std::filesystem::path checkpoint = dir / "fabric_sharded-2.pt.ckpt";
  // Every rank wrote its shard beside rank 0's metadata.
  const fulgur::Checkpoint metadata = fulgur::CheckpointIO::load(checkpoint);
  CHECK(fulgur::is_sharded_checkpoint(metadata));
  int shards = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().find("fabric_sharded-2.pt.ckpt.") == 0) ++shards;
  }
  CHECK(shards == 2);
  // Steps 5 to 8 after the load (the weights and each rank's rows of the momentum) end at the
  // straight run's weights.
  const torch::Tensor resumed = load_pickled_tensor((dir / "fabric_sharded-2.pt.resumed").string());
  CHECK(torch::allclose(resumed, two, 1e-6, 1e-6));
  // The joined checkpoint is one process's: the same run on one rank (a whole file, written
  // asynchronously) ends at the same weights, and its step-4 weights are the sharded save's.
  CHECK(torch::allclose(two, run_probe(dir, "fabric_sharded", 1), 1e-6, 1e-6));
  const fulgur::Checkpoint whole = fulgur::load_whole_checkpoint(checkpoint);
  const fulgur::Checkpoint one = fulgur::CheckpointIO::load(dir / "fabric_sharded-1.pt.ckpt");
  CHECK(whole.at("global_step").toInt() == 4);
  // Names without ShardedUnit's wrapper (`net.0.module.weight` is `net.0.weight` in one process).
  const auto weights = [](const fulgur::Checkpoint& c) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& entry : c.at("state_dict").toGenericDict()) {
      out[std::regex_replace(entry.key().toStringRef(), std::regex("\\.module\\."), ".")] = entry.value().toTensor();
    }
    return out;
  };
  const auto joined = weights(whole);
  const auto single = weights(one);
  REQUIRE(joined.size() == single.size());
  for (const auto& name_tensor : single) {
    const auto& name = name_tensor.first;  // not bound: clang 14 cannot capture a binding
    const auto& tensor = name_tensor.second;
    CAPTURE(name);
    REQUIRE(joined.count(name) == 1);
    CHECK(torch::allclose(joined.at(name), tensor, 1e-6, 1e-6));
  }
}

TEST_CASE("online on a mesh: tp 2 inline (each rank half of every batch) and Fabric equal one process; predict() and "
          "the checkpoint hold whole weights") {
  TempDir dir("online-mpirun-tp");
  const torch::Tensor one = run_probe(dir, "tp_inline", 1);
  CHECK(one.numel() == 4 * 16 + 16 + 16 * 2 + 2);
  CHECK(torch::allclose(run_probe(dir, "tp_fabric", 1), one, 1e-6, 1e-6));
  // Inline: the tp group trains on the rows both ranks were given, as one process on the whole batch.
  CHECK(torch::allclose(run_probe(dir, "tp_inline", 2), one, 1e-5, 1e-5));
  CHECK(torch::allclose(run_probe(dir, "tp_fabric", 2), one, 1e-5, 1e-5));
  // predict() on rank 0 ran the published weights gathered whole.
  CHECK(torch::allclose(load_pickled_tensor((dir / "tp_inline-2.pt.predict").string()),
                        load_pickled_tensor((dir / "tp_inline-1.pt.predict").string()), 1e-5, 1e-5));
  // The checkpoint is one process's: whole tensors, the same values.
  const fulgur::Checkpoint two_ckpt = fulgur::CheckpointIO::load(dir / "tp_inline-2.pt.ckpt");
  const fulgur::Checkpoint one_ckpt = fulgur::CheckpointIO::load(dir / "tp_inline-1.pt.ckpt");
  const auto single = one_ckpt.at("state_dict").toGenericDict();
  const auto split = two_ckpt.at("state_dict").toGenericDict();
  REQUIRE(split.size() == single.size());
  for (const auto& entry : single) {
    CAPTURE(entry.key().toStringRef());
    const torch::Tensor mine = split.at(entry.key()).toTensor();
    CHECK(mine.sizes() == entry.value().toTensor().sizes());
    CHECK(torch::allclose(mine, entry.value().toTensor(), 1e-5, 1e-5));
  }
}

TEST_CASE("SIGTERM mid-run saves a checkpoint at a step boundary; the restarted program resumes and ends as an unstopped run") {
  TempDir dir("online-resume");
  const torch::Tensor straight = run_probe(dir, "inline", 1);
  const std::string output = (dir / "resumed.pt").string();
  const std::string checkpoints = (dir / "checkpoints").string();
  const std::string command = kProbe + " resume " + output + " " + checkpoints;
  const auto stopped = run_command(command + " 5", 300);
  INFO(stopped.output);
  CHECK(stopped.exit_code == 143);  // 128 + SIGTERM: the scheduler sees an unfinished run
  CHECK(std::filesystem::exists(dir / "checkpoints" / "online_last.ckpt"));
  CHECK_FALSE(std::filesystem::exists(output));
  const auto resumed = run_command(command + " -1", 300);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resumed online training at step 6") != std::string::npos);
  CHECK(torch::equal(load_pickled_tensor(output), straight));
}

TEST_CASE("background mode: ranks fed at different rates take the same steps; the first stream to end stops all") {
  // Rank 0 pushes about 16 times as fast as rank 1, whose simulation ends
  // first. Each step's gradient exchange pairs the ranks step by step; a
  // slow producer's replay buffer draws its samples again instead of
  // waiting, and every step agrees whether a stream has ended.
  TempDir dir("online-mpirun-rates");
  const std::string output = (dir / "rates").string();
  const std::string command = "mpirun --allow-run-as-root --oversubscribe -np 2 -x FULGUR_FILE_STORE=" +
                              (dir / "store").string() + " " + kProbe + " rates " + output;
  const auto result = run_command(command, 300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  auto counts = [&](int rank) {
    const std::string line = fulgur::testing::read_file(output + ".rank" + std::to_string(rank) + ".txt");
    std::smatch m;
    REQUIRE(std::regex_search(line, m, std::regex("steps=([0-9]+) pushed=([0-9]+)")));
    return std::pair<long, long>{std::stol(m[1]), std::stol(m[2])};
  };
  const auto [steps0, pushed0] = counts(0);
  const auto [steps1, pushed1] = counts(1);
  CHECK(steps0 == steps1);
  CHECK(steps0 > 0);
  CHECK(pushed1 == 24);
  CHECK(pushed0 > pushed1);
  CHECK(torch::equal(load_pickled_tensor(output + ".rank0.pt"), load_pickled_tensor(output + ".rank1.pt")));
}

TEST_CASE("a rank that dies: the survivor's push fails with one error, and its trained weights are kept and saved") {
  TempDir dir("online-rank-death");
  const std::string checkpoints = (dir / "checkpoints").string();
  // Two ranks as mpirun would start them, without mpirun: it would end the
  // survivor as soon as a rank died.
  auto rank = [&](int r) {
    return "OMPI_COMM_WORLD_RANK=" + std::to_string(r) + " OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(r) +
           " OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 FULGUR_FILE_STORE=" + (dir / "store").string() +
           " " + kProbe + " die " + (dir / "out").string() + " " + checkpoints;
  };
  const auto result = run_command("(" + rank(1) + " > /dev/null 2>&1 &); " + rank(0), 300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(result.output, m,
                            std::regex("push failed: \\[OnlineTrainer\\] background training stopped at step ([0-9]+): "
                                       "[^\\n]*rank 0 of 2[^\\n]*; the weights after step ([0-9]+) are kept "
                                       "\\(published for predict\\(\\) and saved to [^\\n]*online_last.ckpt: a restart "
                                       "resumes there\\)")));
  const long step = std::stol(m[1]);
  CHECK(step >= 5);
  CHECK(std::stol(m[2]) == step);
  CHECK(result.output.find("predict after the failure: finite at step " + std::to_string(step) + " of " +
                           std::to_string(step)) != std::string::npos);
  const fulgur::Checkpoint saved = fulgur::CheckpointIO::load(dir / "checkpoints" / "online_last.ckpt");
  CHECK(saved.at("global_step").toInt() == step);
}

}  // namespace online_mpirun_test
