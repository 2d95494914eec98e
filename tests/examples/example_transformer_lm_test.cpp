// The transformer language model example from its own main(), on the bytes
// of Python's pydoc topics: trained with FULL_SHARD on 2 processes (each
// block a ShardedUnit) it must end where ddp ends, and learn; so must it
// split over a tp x dp or cp x dp mesh; with activation checkpointing it
// ends where it ends without, under every strategy.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <filesystem>

namespace example_transformer_lm_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kExample = std::string(FULGUR_BINARY_DIR) + "/bin/transformer_lm";

struct Run {
  int exit_code;
  std::string output;
  torch::Tensor weights;
};

/// `env`: variables set for the run (and the ranks it starts), e.g. "OMP_NUM_THREADS=1 ".
Run train(const TempDir& dir, const std::string& name, const std::string& flags, const std::string& env = "") {
  const auto weights = dir / (name + ".pt");
  const auto result = run_command(env + kExample + " --layers 2 --dim 32 --heads 2 --context 32 --batch_size 8 " +
                                      "--limit_train_batches 30 --limit_val_batches 4 --default_root_dir " + (dir / name).string() +
                                      " --weights " + weights.string() + " " + flags,
                                  300);
  torch::Tensor loaded;
  if (std::filesystem::exists(weights)) loaded = fulgur::testing::load_pickled_tensor(weights);
  return {result.exit_code, result.output, loaded};
}

/// The run every split of the model must end equal to: ddp on 2 processes.
/// Trained once and shared by the cases that compare with it.
const Run& ddp_reference() {
  static const TempDir dir("example-transformer-lm-ddp");
  static const Run ddp = train(dir, "ddp", "--devices 2 --strategy ddp");
  return ddp;
}

double perplexity(const std::string& output) {
  const auto at = output.find("perplexity ");
  REQUIRE(at != std::string::npos);
  return std::stod(output.substr(at + 11));
}

}  // namespace

TEST_CASE("transformer_lm example: FULL_SHARD on 2 processes ends where ddp ends, and the model learns") {
  // The corpus comes with Debian's libpython3.11-stdlib (scripts/setup.sh installs it).
  REQUIRE(std::filesystem::exists("/usr/lib/python3.11/pydoc_data/topics.py"));
  TempDir dir("example-transformer-lm");
  const Run& ddp = ddp_reference();
  INFO(ddp.output);
  REQUIRE(ddp.exit_code == 0);
  const Run full = train(dir, "full", "--devices 2 --strategy fsdp --fsdp.sharding_strategy FULL_SHARD --fsdp.state_dict_type sharded");
  INFO(full.output);
  REQUIRE(full.exit_code == 0);
  REQUIRE(ddp.weights.defined());
  REQUIRE(full.weights.defined());
  CHECK(torch::allclose(full.weights, ddp.weights, 1e-5, 1e-5));
  // 256 byte values: a model that learned nothing has perplexity 256.
  CHECK(perplexity(full.output) < 40.0);
  CHECK(perplexity(full.output) == doctest::Approx(perplexity(ddp.output)).epsilon(1e-4));
  // The sharded checkpoint: one shard per rank beside last.ckpt.
  int shards = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "full")) {
    shards += entry.path().filename().string().find("last.ckpt.") == 0 ? 1 : 0;
  }
  CHECK(shards == 2);
}

TEST_CASE("transformer_lm example: tp 2 x dp 2 with sequence parallelism, cp 2 x dp 2, pp 2 x dp 2 and pp x tp x dp end where ddp on 2 ends") {
  REQUIRE(std::filesystem::exists("/usr/lib/python3.11/pydoc_data/topics.py"));
  TempDir dir("example-transformer-lm-mesh");
  const Run& ddp = ddp_reference();
  INFO(ddp.output);
  REQUIRE(ddp.exit_code == 0);
  // The same global batch: dp 2 in each, the model split over the other 2.
  const Run tp = train(dir, "tp", "--devices 4 --strategy model_parallel --model_parallel.tensor_parallel_size 2 "
                                   "--sequence_parallel true");
  INFO(tp.output);
  REQUIRE(tp.exit_code == 0);
  const Run cp = train(dir, "cp", "--devices 4 --strategy model_parallel --model_parallel.context_parallel_size 2");
  INFO(cp.output);
  REQUIRE(cp.exit_code == 0);
  CHECK(perplexity(ddp.output) < 40.0);
  CHECK(perplexity(tp.output) == doctest::Approx(perplexity(ddp.output)).epsilon(1e-4));
  CHECK(perplexity(cp.output) == doctest::Approx(perplexity(ddp.output)).epsilon(1e-4));
  // Each tp rank keeps half of the split layers: fewer numbers than a ddp replica.
  CHECK(tp.weights.numel() < ddp.weights.numel());
  // A pipeline of 2 stages x dp 2, and 3D: pp 2 x tp 2 (sequence parallel) x dp 2 on 8 processes.
  const std::string pipeline = "--strategy model_parallel --model_parallel.data_parallel ddp "
                               "--model_parallel.pipeline_parallel_size 2 ";
  const Run pp = train(dir, "pp", "--devices 4 " + pipeline + "--model_parallel.pipeline_schedule zero_bubble");
  INFO(pp.output);
  REQUIRE(pp.exit_code == 0);
  const Run three_d = train(dir, "3d", "--devices 8 " + pipeline + "--model_parallel.tensor_parallel_size 2 --sequence_parallel true");
  INFO(three_d.output);
  REQUIRE(three_d.exit_code == 0);
  CHECK(perplexity(pp.output) == doctest::Approx(perplexity(ddp.output)).epsilon(1e-4));
  CHECK(perplexity(three_d.output) == doctest::Approx(perplexity(ddp.output)).epsilon(1e-4));
  // Rank 0 holds the first stage only (the embeddings and one block).
  CHECK(pp.weights.numel() < ddp.weights.numel());
}

TEST_CASE("transformer_lm example: with whole_after_fit false each rank keeps only its rows after fit") {
  // The corpus comes with Debian's libpython3.11-stdlib (scripts/setup.sh installs it).
  REQUIRE(std::filesystem::exists("/usr/lib/python3.11/pydoc_data/topics.py"));
  TempDir dir("example-transformer-lm-shards");
  const std::string sharded = "--devices 2 --strategy fsdp --fsdp.sharding_strategy FULL_SHARD --max_steps 3 ";
  const Run whole = train(dir, "whole", sharded);
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  const Run kept = train(dir, "kept", sharded + "--fsdp.whole_after_fit false");
  INFO(kept.output);
  REQUIRE(kept.exit_code == 0);
  const torch::Tensor rank1 = fulgur::testing::load_pickled_tensor(dir / "kept.pt.rank1");
  // Every parameter is split by rows between the two ranks: together they hold the model once.
  CHECK(kept.weights.numel() < whole.weights.numel());
  CHECK(rank1.numel() < whole.weights.numel());
  CHECK(kept.weights.numel() + rank1.numel() == whole.weights.numel());
}

TEST_CASE("transformer_lm example: activation checkpointing ends where the plain run ends, under single, ddp and fsdp") {
  REQUIRE(std::filesystem::exists("/usr/lib/python3.11/pydoc_data/topics.py"));
  TempDir dir("example-transformer-lm-checkpointing");
  // One intra-op thread per process: with several, a run's CPU reductions may split
  // differently (seen about once in 20 pairs, with AdamW scaling the difference up).
  const std::string one_thread = "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 ";
  for (const std::string strategy : {"--devices 1 --strategy single_device", "--devices 2 --strategy ddp",
                                     "--devices 2 --strategy fsdp --fsdp.sharding_strategy FULL_SHARD"}) {
    CAPTURE(strategy);
    const std::string name = strategy.substr(strategy.rfind(' ') + 1);
    const Run plain = train(dir, name + "-plain", strategy + " --max_steps 4", one_thread);
    INFO(plain.output);
    REQUIRE(plain.exit_code == 0);
    const Run recomputed =
        train(dir, name + "-recomputed", strategy + " --max_steps 4 --activation_checkpointing true", one_thread);
    INFO(recomputed.output);
    REQUIRE(recomputed.exit_code == 0);
    REQUIRE(plain.weights.defined());
    REQUIRE(recomputed.weights.defined());
    CHECK(torch::allclose(recomputed.weights, plain.weights, 1e-6, 1e-6));
    CHECK(!torch::equal(plain.weights, train(dir, name + "-other", strategy + " --max_steps 3", one_thread).weights));
  }
}

}  // namespace example_transformer_lm_test
