// Strategy model_parallel in real processes: a one-block decoder split over
// a tp x cp x dp mesh (fulgur's launcher, Gloo; and mpirun, MPI) trains to the
// weights one process reaches on the same global batch; checkpoints written
// on one mesh load into another. Runs of one world size share a launch
// (run_all): the ranks' start-up is most of a run's time.
#include "support/metrics_csv.hpp"
#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

namespace model_parallel_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::only_checkpoint;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = fulgur::testing::probe_program("model_parallel_probe");

const std::string kHaloProbe = fulgur::testing::probe_program("halo_probe");

// One run's arguments (after the program).
std::string fit_args(const TempDir& dir, const std::string& name, const std::string& extra) {
  return "fit --seed_everything 7 --trainer.accelerator cpu --trainer.enable_progress_bar false "
         "--trainer.num_sanity_val_steps 0 --trainer.limit_val_batches 0 --trainer.process_group_timeout 60 "
         "--trainer.max_epochs 2 --trainer.default_root_dir " +
         (dir.path() / name).string() + " --model.output " + (dir.path() / (name + ".pt")).string() + " " + extra;
}

std::string fit(const TempDir& dir, const std::string& name, const std::string& extra,
                const std::string& program = kProbe) {
  return program + " " + fit_args(dir, name, extra);
}

std::string mesh(int64_t devices, int64_t tp, const std::string& data_parallel = "fsdp") {
  return fmt::format("--trainer.devices {} --trainer.strategy model_parallel --trainer.model_parallel.tensor_parallel_size {} "
                     "--trainer.model_parallel.data_parallel {}",
                     devices, tp, data_parallel);
}

torch::Tensor run_and_load(const TempDir& dir, const std::string& name, const std::string& extra,
                           const std::string& program = kProbe) {
  const auto result = run_command(fit(dir, name, extra, program), 300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return load_pickled_tensor(dir / (name + ".pt"));
}

struct Run {
  std::string name, extra;
};

/// Runs of one world size in one launch (`runs`, tests/probes/probe_runs.hpp):
/// the ranks start once, not once per run. Each run's parameters, in order.
std::vector<torch::Tensor> run_all(const TempDir& dir, int world, const std::vector<Run>& runs,
                                   const std::string& program = kProbe) {
  std::vector<std::string> lines;
  for (const Run& run : runs) lines.push_back(fit_args(dir, run.name, run.extra));
  const auto result = fulgur::testing::run_in_one_launch(program, world, dir / (runs.front().name + ".runs"), lines);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::vector<torch::Tensor> params;
  for (const Run& run : runs) params.push_back(load_pickled_tensor(dir / (run.name + ".pt")));
  return params;
}


}  // namespace

TEST_CASE("model_parallel: tp 2 (sequence parallel off and on) and tp 2 x dp 2 (ddp, fsdp) equal one process") {
  TempDir dir("model-parallel-equivalence");
  const auto ones = run_all(dir, 1, {{"one", "--data.batch_size 8"},
                                     {"initial", "--data.batch_size 8 --trainer.max_epochs 0"}});
  const torch::Tensor& one = ones[0];
  CHECK_FALSE(torch::allclose(one, ones[1], 1e-3, 1e-3));  // training moved the weights

  const auto tp = run_all(dir, 2, {{"tp2", mesh(2, 2) + " --data.batch_size 8"},
                                   {"sp", mesh(2, 2) + " --data.batch_size 8 --model.sequence_parallel true"}});
  CHECK(torch::allclose(tp[0], one, 1e-5, 1e-5));
  CHECK(torch::allclose(tp[1], one, 1e-5, 1e-5));
  // What stays whole (the norms, the row-split layers' biases) is the same on both ranks.
  for (const std::string name : {"tp2", "sp"}) {
    CAPTURE(name);
    const torch::Tensor rank0 = load_pickled_tensor(dir / (name + ".pt.rank0"));
    CHECK(rank0.numel() > 0);
    CHECK(torch::equal(rank0, load_pickled_tensor(dir / (name + ".pt.rank1"))));
  }
  const auto dp = run_all(dir, 4, {{"dp2-ddp", mesh(4, 2, "ddp") + " --data.batch_size 4"},
                                   {"dp2-fsdp", mesh(4, 2) + " --data.batch_size 4 --model.sequence_parallel true"}});
  CHECK(torch::allclose(dp[0], one, 1e-5, 1e-5));
  CHECK(torch::allclose(dp[1], one, 1e-5, 1e-5));
}

TEST_CASE("model_parallel: ring attention over cp 2, and tp 2 x cp 2 with sequence parallelism, equal one process") {
  TempDir dir("model-parallel-context");
  const torch::Tensor one = run_and_load(dir, "one", "--data.batch_size 8");
  const std::string cp2 = " --trainer.model_parallel.context_parallel_size 2 --data.batch_size 8";
  CHECK(torch::allclose(run_and_load(dir, "cp2", mesh(2, 1) + cp2), one, 1e-5, 1e-5));
  CHECK(torch::allclose(run_and_load(dir, "tp2-cp2", mesh(4, 2) + cp2 + " --model.sequence_parallel true"), one, 1e-5,
                        1e-5));
}

TEST_CASE("model_parallel: a convolutional network on bands of rows (halo exchange) over cp 2, and cp 2 x dp 2, equals one process") {
  TempDir dir("model-parallel-halo");
  const auto ones = run_all(dir, 1, {{"one", "--data.batch_size 8"}, {"initial", "--data.batch_size 8 --trainer.max_epochs 0"}},
                            kHaloProbe);
  const torch::Tensor& one = ones[0];
  CHECK_FALSE(torch::allclose(one, ones[1], 1e-3, 1e-3));  // training moved the weights
  const std::string cp2 = " --trainer.model_parallel.context_parallel_size 2";
  CHECK(torch::allclose(run_and_load(dir, "cp2", mesh(2, 1, "ddp") + cp2 + " --data.batch_size 8", kHaloProbe), one,
                        1e-5, 1e-5));
  // The weights stay whole, the same on both bands' ranks.
  CHECK(torch::equal(load_pickled_tensor(dir / "cp2.pt.rank0"), load_pickled_tensor(dir / "cp2.pt.rank1")));
  CHECK(torch::allclose(run_and_load(dir, "cp2-dp2", mesh(4, 1) + cp2 + " --data.batch_size 4", kHaloProbe), one, 1e-5,
                        1e-5));
  // Bands of 3 rows, a dilated kernel that needs 4 beyond them: one line with both numbers.
  const auto narrow =
      run_command(fit(dir, "narrow", mesh(2, 1, "ddp") + cp2 + " --data.size 6 --data.batch_size 8", kHaloProbe), 120);
  INFO(narrow.output);
  CHECK(narrow.exit_code != 0);
  CHECK(narrow.output.find("[halo_exchange] a halo of 4 rows does not fit the 3 rows this rank holds") !=
        std::string::npos);
}

TEST_CASE("model_parallel: logged values sync over dp only, as one process logs them") {
  TempDir dir("model-parallel-logged");
  const std::string validate = " --trainer.max_epochs 1 --trainer.limit_val_batches 1.0";
  run_and_load(dir, "one", "--data.batch_size 8" + validate);
  run_and_load(dir, "tp2-dp2", mesh(4, 2, "ddp") + " --data.batch_size 4" + validate);
  auto logged = [&](const std::string& name, const std::string& column) {
    const auto series = fulgur::testing::csv_series(
        fulgur::testing::read_file(dir / name / "fulgur_logs" / "version_0" / "metrics.csv"), column);
    REQUIRE(series.size() == 1);
    return series.front().second;
  };
  // 32 sequences of 8 tokens, each counted once (over the world: twice).
  CHECK(logged("one", "val_tokens") == 256.0);
  CHECK(logged("tp2-dp2", "val_tokens") == 256.0);
  CHECK(logged("tp2-dp2", "val_loss") == doctest::Approx(logged("one", "val_loss")).epsilon(1e-6));
}

TEST_CASE("model_parallel: gradient clipping takes the norm over every shard, as one process does") {
  TempDir dir("model-parallel-clip");
  const std::string clip = " --data.batch_size 8 --trainer.gradient_clip_val 0.05";
  const auto ones = run_all(dir, 1, {{"one", clip}, {"unclipped", "--data.batch_size 8"}});
  const torch::Tensor& one = ones[0];
  CHECK_FALSE(torch::allclose(one, ones[1], 1e-4, 1e-4));  // the clip is active
  CHECK(torch::allclose(run_and_load(dir, "tp2", mesh(2, 2) + clip + " --model.sequence_parallel true"), one, 1e-5,
                        1e-5));
}

TEST_CASE("model_parallel: a checkpoint written on tp 2 loads into tp 1 and tp 4, and dp 2 x tp 2 into dp 4, bit for bit" *
          doctest::test_suite("model_parallel_checkpoint_test")) {
  TempDir dir("model-parallel-reshard");
  const torch::Tensor tp2 = run_and_load(dir, "tp2", mesh(2, 2) + " --data.batch_size 8");
  // A copy: a fit resumed from a checkpoint in another run's folder may replace it as its best.
  const std::string ckpt = (dir.path() / "tp2.ckpt").string();
  std::filesystem::copy_file(only_checkpoint(dir / "tp2"), ckpt);
  // max_epochs as the checkpoint's: the fit restores and ends at once. And
  // on: one more epoch on tp 4 from tp 2's state equals one process resumed from it.
  const auto ones = run_all(dir, 1, {{"tp1", "--data.batch_size 8 --ckpt_path " + ckpt},
                                     {"one-more", "--data.batch_size 8 --trainer.max_epochs 3 --ckpt_path " + ckpt}});
  CHECK(torch::equal(ones[0], tp2));
  const torch::Tensor& resumed = ones[1];
  CHECK_FALSE(torch::equal(resumed, tp2));
  // dp 2 x tp 2 (fsdp along dp), later loaded into dp 4 x tp 1.
  const auto fours = run_all(dir, 4, {{"tp4", mesh(4, 4) + " --data.batch_size 8 --ckpt_path " + ckpt},
                                      {"tp4-more", mesh(4, 4) + " --data.batch_size 8 --trainer.max_epochs 3 --ckpt_path " + ckpt},
                                      {"dp2-tp2", mesh(4, 2) + " --data.batch_size 4"}});
  CHECK(torch::equal(fours[0], tp2));
  CHECK(torch::allclose(fours[1], resumed, 1e-5, 1e-5));
  const torch::Tensor& grid = fours[2];
  const std::string grid_ckpt = (dir.path() / "dp2-tp2.ckpt").string();
  std::filesystem::copy_file(only_checkpoint(dir / "dp2-tp2"), grid_ckpt);
  CHECK(torch::equal(run_and_load(dir, "dp4", mesh(4, 1) + " --data.batch_size 4 --ckpt_path " + grid_ckpt), grid));
}

TEST_CASE("model_parallel: a sharded checkpoint (each tp rank its slices) consolidates to the whole one, and loads into tp 1 and tp 4" *
          doctest::test_suite("model_parallel_checkpoint_test")) {
  TempDir dir("model-parallel-sharded");
  const std::string tp2 = mesh(2, 2, "ddp") + " --data.batch_size 8";
  const auto both = run_all(dir, 2, {{"whole", tp2}, {"sharded", tp2 + " --trainer.model_parallel.state_dict_type sharded"}});
  const torch::Tensor& whole = both[0];
  CHECK(torch::equal(whole, both[1]));
  const auto ckpt = fulgur::testing::copy_checkpoint(only_checkpoint(dir / "sharded"), dir.path() / "sharded-ckpt");
  CHECK(fulgur::testing::checkpoint_parts(ckpt) == 2);  // one per tp rank
  // Joined, the parts are the whole checkpoint's tensors, bit for bit, as Python reads them.
  CHECK(fulgur::testing::joined_differs(ckpt, only_checkpoint(dir / "whole")) == "");
  // max_epochs as the checkpoint's: the fit restores and ends at once.
  CHECK(torch::equal(run_and_load(dir, "tp1", "--data.batch_size 8 --ckpt_path " + ckpt.string()), whole));
  // One more epoch on tp 4 from the parts equals one more from the whole file.
  const std::string more = mesh(4, 4, "ddp") + " --data.batch_size 8 --trainer.max_epochs 3 --ckpt_path ";
  const auto whole_ckpt = fulgur::testing::copy_checkpoint(only_checkpoint(dir / "whole"), dir.path() / "whole-ckpt");
  const auto mores = run_all(dir, 4, {{"more-whole", more + whole_ckpt.string()}, {"more-sharded", more + ckpt.string()}});
  CHECK_FALSE(torch::equal(mores[0], whole));
  CHECK(torch::equal(mores[1], mores[0]));
}

TEST_CASE("model_parallel: with fsdp along dp, the sharded checkpoint (each tp slice whole over dp) equals the whole one" *
          doctest::test_suite("model_parallel_checkpoint_test")) {
  TempDir dir("model-parallel-sharded-fsdp");
  const std::string grid = mesh(4, 2) + " --data.batch_size 4 --trainer.max_epochs 1";
  const auto both = run_all(dir, 4, {{"whole", grid}, {"sharded", grid + " --trainer.model_parallel.state_dict_type sharded"}});
  const torch::Tensor& whole = both[0];
  CHECK(torch::equal(both[1], whole));
  const auto ckpt = fulgur::testing::copy_checkpoint(only_checkpoint(dir / "sharded"), dir.path() / "sharded-ckpt");
  CHECK(fulgur::testing::checkpoint_parts(ckpt) == 2);  // one per tp slice: dp rank 0 writes it, gathered from both dp ranks' rows
  // Weights and Adam's moments, bit for bit, as Python reads them.
  CHECK(fulgur::testing::joined_differs(ckpt, only_checkpoint(dir / "whole")) == "");
  CHECK(torch::equal(run_and_load(dir, "tp1", "--data.batch_size 8 --trainer.max_epochs 1 --ckpt_path " + ckpt.string()), whole));
}

TEST_CASE("model_parallel: SIGTERM to one tp rank stops both after the same step with a checkpoint; resumed, the run ends where one process ends" *
          doctest::test_suite("model_parallel_checkpoint_test")) {
  TempDir dir("model-parallel-sigterm");
  const torch::Tensor one = run_and_load(dir, "one", "");
  // 4 steps per epoch, 8 in all: SIGTERM on global rank 1 (tp rank 1) during step 5.
  const auto stopped = run_command(
      fit(dir, "stopped", mesh(2, 2) + " --model.signal_step 5 --trainer.stop_check_every_n_steps 1"), 120);
  INFO(stopped.output);
  CHECK(stopped.exit_code == 128 + SIGTERM);
  CHECK(fulgur::testing::stop_step(stopped.output, "SIGTERM", 2) < 8);  // both after the same step, before the end
  const std::string copy = (dir.path() / "stopped.ckpt").string();
  std::filesystem::copy_file(fulgur::testing::last_checkpoint(dir / "stopped"), copy);
  CHECK(torch::allclose(run_and_load(dir, "resumed", mesh(2, 2) + " --ckpt_path " + copy), one, 1e-5, 1e-5));
}

TEST_CASE("model_parallel: a mesh that does not fit the world, or heads tp does not divide, is one line") {
  TempDir dir("model-parallel-refused");
  const auto world = run_command(fit(dir, "world", mesh(2, 3)), 120);
  CHECK(world.exit_code != 0);
  CHECK(world.output.find("tensor_parallel_size 3 x context_parallel_size 1 = 3 does not divide the world size 2") !=
        std::string::npos);
  const auto heads = run_command(fit(dir, "heads", mesh(2, 2) + " --model.heads 1"), 120);
  CHECK(heads.exit_code != 0);
  CHECK(heads.output.find("heads 1 cannot be split evenly over tp size 2") != std::string::npos);
  const auto plain = run_command(fit(dir, "dims", mesh(2, 2) + " --model.dim 15 --model.heads 2"), 120);
  CHECK(plain.exit_code != 0);
  CHECK(plain.output.find("cannot be split evenly over tensor_parallel_size 2") != std::string::npos);
}

TEST_CASE("model_parallel: tp 2 over MPI under mpirun equals tp 2 over Gloo") {
  TempDir dir("model-parallel-mpi");
  const torch::Tensor gloo = run_and_load(dir, "gloo", mesh(2, 2) + " --data.batch_size 8 --model.sequence_parallel true");
  const std::string mpirun = "env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root "
                             "--oversubscribe -np 2 ";
  const auto mpi = run_command(mpirun + fit(dir, "mpi", mesh(2, 2) + " --data.batch_size 8 --model.sequence_parallel true "
                                                             "--trainer.process_group_backend mpi"),
                               300);
  INFO(mpi.output);
  REQUIRE(mpi.exit_code == 0);
  CHECK(torch::allclose(load_pickled_tensor(dir / "mpi.pt"), gloo, 1e-6, 1e-6));
}

}  // namespace model_parallel_test
