// Pipeline parallelism in real processes: a stack of layers split into a
// pipeline's stages (fulgur's launcher, Gloo; and mpirun, MPI) trains, with
// every schedule, to the weights and the logged loss one process reaches on
// the same global batch; so do a pipeline beside data (ddp or fsdp) and
// tensor parallelism (3D on 8 processes) and a four-stage one. Checkpoints load
// across pipeline sizes. A stage that fails ends every rank. Runs of one
// world size share a launch (run_all): the ranks' start-up is most of a run's time.
#include "support/metrics_csv.hpp"
#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

namespace pipeline_parallel_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = fulgur::testing::probe_program("pipeline_probe");
constexpr int64_t kLayers = 4;

// One run's arguments (after the program).
std::string fit_args(const TempDir& dir, const std::string& name, const std::string& extra, bool checkpoints) {
  return std::string("fit --seed_everything 7 --trainer.accelerator cpu --trainer.enable_progress_bar false ") +
         "--trainer.num_sanity_val_steps 0 --trainer.limit_val_batches 0 --trainer.process_group_timeout 60 " +
         "--trainer.enable_checkpointing " + (checkpoints ? "true" : "false") +
         " --trainer.max_epochs 2 --trainer.log_every_n_steps 1 " +
         "--trainer.default_root_dir " + (dir.path() / name).string() + " --model.output " +
         (dir.path() / (name + ".pt")).string() + " " + extra;
}

std::string fit(const TempDir& dir, const std::string& name, const std::string& extra, bool checkpoints = false) {
  return kProbe + " " + fit_args(dir, name, extra, checkpoints);
}

std::string pipeline(int64_t devices, int64_t pp, const std::string& schedule, const std::string& dp = "ddp") {
  return fmt::format("--trainer.devices {} --trainer.strategy model_parallel --trainer.model_parallel.data_parallel {} "
                     "--trainer.model_parallel.pipeline_parallel_size {} --trainer.model_parallel.pipeline_schedule {}",
                     devices, dp, pp, schedule);
}

/// Every layer's final parameters, as run `name`'s ranks wrote them.
std::vector<torch::Tensor> load_layers(const TempDir& dir, const std::string& name) {
  std::vector<torch::Tensor> layers;
  for (int64_t i = 0; i < kLayers; ++i) layers.push_back(load_pickled_tensor(dir / fmt::format("{}.pt.layer{}", name, i)));
  return layers;
}

/// Runs `name` and loads its layers.
std::vector<torch::Tensor> run_and_load(const TempDir& dir, const std::string& name, const std::string& extra,
                                        bool checkpoints = false) {
  const auto result = run_command(fit(dir, name, extra, checkpoints), 120);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return load_layers(dir, name);
}

struct Run {
  std::string name, extra;
  bool checkpoints = false;
};

/// Runs of one world size in one launch (`runs`, tests/probes/probe_runs.hpp):
/// the ranks start once, not once per run. Each run's layers, in order.
std::vector<std::vector<torch::Tensor>> run_all(const TempDir& dir, int world, const std::vector<Run>& runs) {
  std::vector<std::string> lines;
  for (const Run& run : runs) lines.push_back(fit_args(dir, run.name, run.extra, run.checkpoints));
  const auto result = fulgur::testing::run_in_one_launch(kProbe, world, dir / (runs.front().name + ".runs"), lines);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::vector<std::vector<torch::Tensor>> all;
  for (const Run& run : runs) all.push_back(load_layers(dir, run.name));
  return all;
}

std::vector<std::pair<int64_t, double>> logged(const TempDir& dir, const std::string& name, const std::string& column) {
  return fulgur::testing::csv_series(
      fulgur::testing::read_file(dir / name / "fulgur_logs" / "version_0" / "metrics.csv"), column);
}

/// The one checkpoint file (not last.ckpt) a run wrote, copied out of its folder (a
/// fit resumed from a checkpoint in another run's folder may replace it as its best).
std::string copied_checkpoint(const TempDir& dir, const std::string& name) {
  const std::string copy = (dir.path() / (name + ".ckpt")).string();
  std::filesystem::copy_file(fulgur::testing::only_checkpoint(dir / name), copy);
  return copy;
}

void check_same(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::equal(got[i], expected[i]));
  }
}

void check_equal(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& one) {
  for (size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(got[i], one[i], 1e-5, 1e-6));
  }
}

}  // namespace

TEST_CASE("pipeline: pp 2 with gpipe, 1f1b, interleaved_1f1b and zero_bubble equals one process") {
  TempDir dir("pipeline-schedules");
  const auto ones = run_all(dir, 1, {{"one", ""}, {"initial", "--trainer.max_epochs 0"}});
  const auto& one = ones[0];
  CHECK_FALSE(torch::allclose(one[0], ones[1][0], 1e-3, 1e-3));  // training moved the weights
  const auto one_loss = logged(dir, "one", "train_loss");
  REQUIRE(one_loss.size() == 8);
  const std::vector<std::string> schedules{"gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"};
  std::vector<Run> runs;
  for (const std::string& schedule : schedules) runs.push_back({schedule, pipeline(2, 2, schedule)});
  const auto pipelines = run_all(dir, 2, runs);
  for (size_t s = 0; s < schedules.size(); ++s) {
    const std::string& schedule = schedules[s];
    CAPTURE(schedule);
    check_equal(pipelines[s], one);
    // Every step's loss as one process logged it (the micro-batches' mean).
    const auto loss = logged(dir, schedule, "train_loss");
    REQUIRE(loss.size() == one_loss.size());
    for (size_t i = 0; i < loss.size(); ++i) {
      CHECK(loss[i].first == one_loss[i].first);
      CHECK(loss[i].second == doctest::Approx(one_loss[i].second).epsilon(1e-5));
    }
  }
}

TEST_CASE("pipeline: pp 2 x dp 2 (ddp; fsdp FULL_SHARD and SHARD_GRAD_OP) and pp 4 (8 micro-batches, gradient "
          "clipping, validation) equal one process; fsdp's checkpoint loads into one process and into its pipeline") {
  TempDir dir("pipeline-mesh");
  const std::string clip_and_validate = "--trainer.gradient_clip_val 0.05 --trainer.limit_val_batches 2";
  const auto one = run_and_load(dir, "one", "--data.batch_size 8 " + clip_and_validate);
  // fsdp along dp: each stage sharded over its 2 dp ranks, one unit per
  // layer (min_num_params 50), kept sharded between steps (FULL_SHARD);
  // and each rank's two stages as one unit each, whole between steps
  // (SHARD_GRAD_OP). fsdp-sharded saves its checkpoint sharded: each stage's
  // part gathered over its dp ranks, one part per stage.
  const std::string fsdp_args =
      pipeline(4, 2, "1f1b", "fsdp") + " --trainer.fsdp.min_num_params 50 --data.batch_size 4 " + clip_and_validate;
  const auto fours = run_all(
      dir, 4,
      {{"dp2", pipeline(4, 2, "1f1b") + " --data.batch_size 4 " + clip_and_validate},
       {"pp4", pipeline(4, 4, "zero_bubble") + " --data.batch_size 8 --trainer.model_parallel.microbatches 8 " +
                   clip_and_validate},
       {"fsdp", fsdp_args, true},
       {"fsdp-grad-op", pipeline(4, 2, "interleaved_1f1b", "fsdp") +
                            " --trainer.fsdp.sharding_strategy SHARD_GRAD_OP --data.batch_size 4 " + clip_and_validate},
       {"fsdp-sharded", fsdp_args + " --trainer.model_parallel.state_dict_type sharded", true}});
  check_equal(fours[0], one);
  check_equal(fours[1], one);
  const auto& fsdp = fours[2];
  check_equal(fsdp, one);
  check_equal(fours[3], one);
  check_same(fours[4], fsdp);
  // Its whole checkpoint (Adam's moments gathered from the shards) into one
  // process bit for bit; one more epoch from it on one process and on the
  // fsdp pipeline (each rank taking its stage's rows) agree.
  const std::string fsdp_ckpt = copied_checkpoint(dir, "fsdp");
  const auto fsdp_sharded =
      fulgur::testing::copy_checkpoint(fulgur::testing::only_checkpoint(dir / "fsdp-sharded"), dir.path() / "fsdp-sharded-ckpt");
  CHECK(fulgur::testing::checkpoint_parts(fsdp_sharded) == 2);
  CHECK(fulgur::testing::joined_differs(fsdp_sharded, fsdp_ckpt) == "");
  const std::string more = " --trainer.max_epochs 3 --ckpt_path " + fsdp_ckpt + " " + clip_and_validate;
  const auto from_fsdp = run_all(dir, 1, {{"fsdp-to-1", "--data.batch_size 8 " + clip_and_validate + " --ckpt_path " + fsdp_ckpt},
                                          {"one-more", "--data.batch_size 8" + more}});
  check_same(from_fsdp[0], fsdp);
  const auto& one_more = from_fsdp[1];
  CHECK_FALSE(torch::equal(one_more[0], fsdp[0]));
  check_equal(run_and_load(dir, "fsdp-more",
                           pipeline(4, 2, "1f1b", "fsdp") + " --trainer.fsdp.min_num_params 50 --data.batch_size 4" + more),
              one_more);
  const auto one_val = logged(dir, "one", "val_loss");
  REQUIRE(one_val.size() == 2);
  for (const std::string name : {"dp2", "pp4", "fsdp", "fsdp-grad-op"}) {
    CAPTURE(name);
    const auto val = logged(dir, name, "val_loss");
    REQUIRE(val.size() == one_val.size());
    for (size_t i = 0; i < val.size(); ++i) CHECK(val[i].second == doctest::Approx(one_val[i].second).epsilon(1e-5));
  }
}

TEST_CASE("pipeline: pp 2 x tp 2 and 3D, pp 2 x tp 2 x dp 2 (fsdp) on 8 processes, equal one process; 3D's checkpoint "
          "loads into one process") {
  TempDir dir("pipeline-3d");
  const std::string blocks = " --model.tensor_parallel true --trainer.gradient_clip_val 0.05";
  const auto one = run_and_load(dir, "one", "--data.batch_size 8" + blocks);
  const std::string tp2 = " --trainer.model_parallel.tensor_parallel_size 2";
  check_equal(run_and_load(dir, "pp2-tp2", pipeline(4, 2, "1f1b") + tp2 + " --data.batch_size 8" + blocks), one);
  // fsdp along dp (ddp along dp is the mesh case's): each tp part sharded
  // over dp. Its whole checkpoint (each stage's tp parts and dp shards
  // gathered) loads into one process bit for bit.
  const auto three_d =
      run_and_load(dir, "3d", pipeline(8, 2, "zero_bubble", "fsdp") + tp2 + " --data.batch_size 4" + blocks, true);
  check_equal(three_d, one);
  check_same(run_and_load(dir, "3d-to-1", "--data.batch_size 8" + blocks + " --ckpt_path " + copied_checkpoint(dir, "3d")),
             three_d);
}

TEST_CASE("pipeline: a checkpoint of pp 2 loads into pp 1 and pp 1's into pp 2 bit for bit; training on from either agrees") {
  TempDir dir("pipeline-reshard");
  // Interleaved: each rank holds layers that are not next to each other.
  const auto pp2 = run_and_load(dir, "pp2", pipeline(2, 2, "interleaved_1f1b"), true);
  const std::string pp2_ckpt = copied_checkpoint(dir, "pp2");
  // max_epochs as the checkpoint's: the fit restores and ends at once. One
  // more epoch from pp 2's state (parameters and Adam's moments): on one
  // process and on a pipeline.
  const auto ones = run_all(dir, 1, {{"pp2-to-1", "--ckpt_path " + pp2_ckpt}, {"one", "", true},
                                     {"one-more", "--trainer.max_epochs 3 --ckpt_path " + pp2_ckpt}});
  check_same(ones[0], pp2);
  const auto& one = ones[1];
  const auto& more = ones[2];
  CHECK_FALSE(torch::equal(more[0], pp2[0]));
  const auto twos =
      run_all(dir, 2, {{"1-to-pp2", pipeline(2, 2, "1f1b") + " --ckpt_path " + copied_checkpoint(dir, "one")},
                       {"pp2-more", pipeline(2, 2, "zero_bubble") + " --trainer.max_epochs 3 --ckpt_path " + pp2_ckpt}});
  check_same(twos[0], one);
  check_equal(twos[1], more);
}

TEST_CASE("pipeline: a sharded checkpoint (each stage its layers) consolidates to the whole one, and loads into pp 1 and pp 2") {
  TempDir dir("pipeline-sharded");
  const auto both = run_all(dir, 2, {{"whole", pipeline(2, 2, "interleaved_1f1b"), true},
                                     {"sharded", pipeline(2, 2, "interleaved_1f1b") +
                                                     " --trainer.model_parallel.state_dict_type sharded", true}});
  const auto& whole = both[0];
  check_same(both[1], whole);
  const std::string whole_ckpt = copied_checkpoint(dir, "whole");
  const auto ckpt = fulgur::testing::copy_checkpoint(fulgur::testing::only_checkpoint(dir / "sharded"), dir.path() / "sharded-ckpt");
  CHECK(fulgur::testing::checkpoint_parts(ckpt) == 2);  // one per stage
  CHECK(fulgur::testing::joined_differs(ckpt, whole_ckpt) == "");
  // max_epochs as the checkpoint's: the fit restores and ends at once.
  check_same(run_and_load(dir, "to-1", "--ckpt_path " + ckpt.string()), whole);
  const auto mores =
      run_all(dir, 2, {{"more-whole", pipeline(2, 2, "1f1b") + " --trainer.max_epochs 3 --ckpt_path " + whole_ckpt},
                       {"more-sharded", pipeline(2, 2, "1f1b") + " --trainer.max_epochs 3 --ckpt_path " + ckpt.string()}});
  check_same(mores[1], mores[0]);
}

TEST_CASE("pipeline: a signal to the last stage stops every stage after the same step; resumed, the run ends where one process ends") {
  TempDir dir("pipeline-signal");
  const auto one = run_and_load(dir, "one", "");
  // 4 steps per epoch: SIGUSR1 on the last stage's rank during step 5.
  const auto stopped = run_command(fit(dir, "stopped", pipeline(2, 2, "1f1b") + " --model.signal_step 5 --trainer.stop_check_every_n_steps 1", true), 120);
  INFO(stopped.output);
  CHECK(stopped.exit_code == 128 + SIGUSR1);
  CHECK(fulgur::testing::stop_step(stopped.output, "SIGUSR1", 2) < 8);  // both after the same step, before the end
  const std::string copy = (dir / "stopped.ckpt").string();
  std::filesystem::copy_file(fulgur::testing::last_checkpoint(dir / "stopped"), copy);
  check_equal(run_and_load(dir, "resumed", pipeline(2, 2, "zero_bubble") + " --ckpt_path " + copy), one);
}

TEST_CASE("pipeline: pp 2 over MPI under mpirun equals pp 2 over Gloo") {
  TempDir dir("pipeline-mpi");
  const auto gloo = run_and_load(dir, "gloo", pipeline(2, 2, "zero_bubble"));
  const std::string mpirun = "env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root "
                             "--oversubscribe -np 2 ";
  const auto mpi = run_command(mpirun + fit(dir, "mpi", pipeline(2, 2, "zero_bubble") + " --trainer.process_group_backend mpi"),
                               120);
  INFO(mpi.output);
  REQUIRE(mpi.exit_code == 0);
  for (int64_t i = 0; i < kLayers; ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(load_pickled_tensor(dir / fmt::format("mpi.pt.layer{}", i)), gloo[static_cast<size_t>(i)], 1e-6,
                          1e-6));
  }
}

TEST_CASE("pipeline: what it cannot run is refused with one line, and a failing stage ends every rank") {
  TempDir dir("pipeline-refusals");
  auto refused = [&](const std::string& name, const std::string& extra, const std::string& expected) {
    const auto result = run_command(fit(dir, name, extra), 120);
    CAPTURE(result.output);
    CHECK(result.exit_code != 0);
    CHECK(result.output.find(expected) != std::string::npos);
  };
  refused("layers", pipeline(2, 2, "interleaved_1f1b") + " --model.layers 3",
          "a model of 3 layers cannot be split into 4 stages");
  refused("interleaved", pipeline(2, 2, "interleaved_1f1b") + " --trainer.model_parallel.microbatches 3",
          "interleaved_1f1b needs microbatches (3) to be a multiple of pipeline_parallel_size (2)");
  refused("small-batch", pipeline(2, 2, "1f1b") + " --data.batch_size 2",
          "a batch of 2 samples cannot be split into 4 micro-batches");

  const auto start = std::chrono::steady_clock::now();
  const auto failed = run_command(fit(dir, "fails", pipeline(2, 2, "1f1b") + " --model.fail_at_step 3"), 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CAPTURE(failed.output);
  CHECK(failed.exit_code != 0);
  CHECK(failed.output.find("the last stage fails on purpose") != std::string::npos);
  CHECK(seconds < 60);
}

}  // namespace pipeline_parallel_test
