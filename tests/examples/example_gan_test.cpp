// The GAN example (examples/gan): manual optimization with two optimizers
// from its own main(). Under ddp and horovod the replicas stay identical and
// equal one process on the same global batch; its checkpoint holds both
// Adam states and the generator's scheduler, and a run stopped mid-epoch
// and resumed ends bit-identical to an uninterrupted one.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

namespace example_gan_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kGan = std::string(FULGUR_BINARY_DIR) + "/bin/gan";

struct Run {
  int exit_code;
  std::string output;
  std::filesystem::path weights;
};

Run train(const TempDir& dir, const std::string& name, const std::string& flags) {
  const auto weights = dir / (name + ".pt");
  const auto result = run_command(
      kGan + " --default_root_dir " + (dir / name).string() + " --weights " + weights.string() + " " + flags, 300);
  return {result.exit_code, result.output, weights};
}

torch::Tensor load(const std::filesystem::path& path) {
  REQUIRE(std::filesystem::exists(path));
  return fulgur::testing::load_pickled_tensor(path);
}

double metric(const std::string& output, const std::string& name) {
  const auto at = output.find(name + " ");
  REQUIRE(at != std::string::npos);
  return std::stod(output.substr(at + name.size() + 1));
}

}  // namespace

TEST_CASE("gan example: ddp and horovod on 2 processes equal 1 process; two optimizers checkpointed; resume is exact") {
  TempDir dir("example-gan");
  const Run one = train(dir, "one", "--devices 1 --batch_size 64 --max_epochs 6");
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  // It learned: an untrained generator puts almost nothing near the modes.
  CHECK(metric(one.output, "val_quality") > 0.3);
  CHECK(metric(one.output, "val_modes") >= 6);

  // Both optimizers (Adam: step, exp_avg, exp_avg_sq) and the generator's scheduler.
  const auto ckpt = dir / "one" / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt";
  const auto c = fulgur::CheckpointIO::load(ckpt);
  const auto optimizers = c.at("optimizer_states").toList();
  REQUIRE(optimizers.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const auto state = optimizers.get(i).toGenericDict().at("state").toGenericDict();
    CHECK(state.size() == 6);  // three Linear layers' weight and bias
    CHECK(state.at(c10::IValue(int64_t{0})).toGenericDict().contains("exp_avg"));
  }
  CHECK(c.at("lr_schedulers").toList().size() == 1);
  CHECK(c.at("global_step").toInt() == 2 * 6 * 64);  // two optimizer steps per batch
  CHECK(c.at("hyper_parameters").toGenericDict().at("lr_g").toDouble() == 2e-3);

  // Replicas against one process over 1 epoch (128 steps of each Adam): by
  // the end of a second one the GAN's dynamics have amplified the rounding
  // differences of the averaged gradients to about 2e-3 (3.6e-7 after one).
  const Run short_run = train(dir, "short", "--devices 1 --batch_size 64 --max_epochs 1");
  INFO(short_run.output);
  REQUIRE(short_run.exit_code == 0);
  const torch::Tensor short_reference = load(short_run.weights);

  for (const std::string strategy : {"ddp", "horovod"}) {
    CAPTURE(strategy);
    const Run two = train(dir, strategy, "--devices 2 --batch_size 32 --max_epochs 1 --strategy " + strategy);
    INFO(two.output);
    REQUIRE(two.exit_code == 0);
    const torch::Tensor rank0 = load(two.weights);
    const torch::Tensor rank1 = load(two.weights.string() + ".rank1");
    CHECK(torch::equal(rank0, rank1));
    CHECK(torch::allclose(rank0, short_reference, 1e-5, 1e-5));
  }

  // Stopped after 20 optimizer steps (batch 10 of the first epoch), then
  // resumed through the scheduler's step at the first epoch's end.
  const Run reference_run = train(dir, "reference", "--devices 1 --batch_size 64 --max_epochs 2");
  INFO(reference_run.output);
  REQUIRE(reference_run.exit_code == 0);
  const torch::Tensor reference = load(reference_run.weights);
  const Run first = train(dir, "resume", "--devices 1 --batch_size 64 --max_epochs 2 --max_steps 20");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const Run rest = train(dir, "resume", "--devices 1 --batch_size 64 --max_epochs 2 --ckpt_path last");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(torch::equal(load(rest.weights), reference));
}

}  // namespace example_gan_test
