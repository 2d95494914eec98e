// Tuner::lr_find: the range test's curve and its stop on divergence, the
// module left as it was found, and on the digits (the lr_find subcommand of
// the example) a suggestion with which a short fit reaches a good accuracy;
// scripts/plot_lr_find.py draws that curve as a PNG. Tuner::scale_batch_size:
// the sizes power and binsearch try and end at under max_val and the
// training set's size, the module left as it was, the size left set for the
// next fit, and the scale_batch_size subcommand.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/callbacks/tuner.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace tuner_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::ResizableRegressionData;
using fulgur::testing::TempDir;

namespace {

TrainerOptions search_fit_options(const TempDir& dir) {
  return TrainerOptions()
      .default_root_dir(dir.path().string())
      .accelerator(AcceleratorKind::Cpu)
      .enable_progress_bar(false)
      .logger(false)
      .enable_checkpointing(false);
}

}  // namespace

TEST_CASE("lr_find: the sweep stops on divergence; the module is left as it was") {
  TempDir dir("tuner");
  const auto options = TrainerOptions()
                           .default_root_dir(dir.path().string())
                           .accelerator(AcceleratorKind::Cpu)
                           .enable_progress_bar(false)
                           .logger(false)
                           .enable_checkpointing(false);
  torch::manual_seed(0);
  testing::RecordingModule model;
  testing::RegressionData data(10, 2);
  std::vector<torch::Tensor> before;
  for (const auto& p : model.parameters()) before.push_back(p.detach().clone());
  const torch::Tensor rng = at::detail::getDefaultCPUGenerator().get_state();

  auto finder = Tuner(options).lr_find(model, data, LRFinderOptions().min_lr(1e-3).max_lr(1e3).num_training_steps(60));
  // Exponential from min_lr, one point per optimizer step, stopped once the loss diverged
  // (plain SGD on a regression explodes long before lr 1000).
  REQUIRE(finder->lrs().size() >= 12);
  CHECK(finder->lrs().size() < 60);
  CHECK(finder->lrs()[0] == doctest::Approx(1e-3));
  CHECK(finder->lrs()[10] == doctest::Approx(1e-3 * std::pow(1e6, 10.0 / 60)));
  const double best = *std::min_element(finder->losses().begin(), finder->losses().end() - 1);
  CHECK((!std::isfinite(finder->losses().back()) || finder->losses().back() > 4 * best));
  const auto suggestion = finder->suggestion();
  REQUIRE(suggestion);
  CHECK(*suggestion >= finder->lrs()[10]);
  // The module and the random generator are as they were; nothing was written.
  size_t i = 0;
  for (const auto& p : model.parameters()) CHECK(torch::equal(p, before[i++]));
  CHECK(torch::equal(at::detail::getDefaultCPUGenerator().get_state(), rng));
  CHECK(std::filesystem::is_empty(dir.path()));

  finder->write_csv(dir / "lr_find.csv");
  const std::string csv = read_file(dir / "lr_find.csv");
  CHECK(csv.rfind("lr,loss\n0.001,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == static_cast<long>(finder->lrs().size() + 1));
}

TEST_CASE("LRFinder: the sweep's learning rates and its option checks") {
  LRFinder linear(LRFinderOptions().min_lr(0.1).max_lr(1.1).num_training_steps(10).mode(LRFinderMode::Linear));
  CHECK(linear.learning_rate(0) == doctest::Approx(0.1));
  CHECK(linear.learning_rate(5) == doctest::Approx(0.6));
  LRFinder exponential(LRFinderOptions().min_lr(1e-4).max_lr(1).num_training_steps(4));
  CHECK(exponential.learning_rate(2) == doctest::Approx(1e-2));
  CHECK_FALSE(exponential.suggestion());  // no points yet
  CHECK_THROWS_WITH_AS(LRFinder(LRFinderOptions().min_lr(1).max_lr(0.5)), "[LRFinder] max_lr (0.5) must be > min_lr (1)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_choice<LRFinderMode>("cyclic"), doctest::Contains("must be one of exponential, linear"),
                       std::invalid_argument);
}

TEST_CASE("lr_find on the digits: the suggestion lets a short fit reach a good accuracy (the CLI subcommand)") {
  const std::string root = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
  REQUIRE_MESSAGE(std::filesystem::exists(root + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("tuner-cli");
  const std::string common = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 {} --config " + FULGUR_SOURCE_DIR +
                             "/examples/cinic10/digits.yaml --data.root " + root +
                             " --data.num_workers 0 --trainer.enable_progress_bar false --test_after_fit false";
  auto run = [&](const std::string& subcommand, const std::string& root_dir, const std::string& extra) {
    const std::string command = fmt::format(fmt::runtime(common), subcommand) +
                                " --trainer.default_root_dir " + root_dir + " " + extra;
    const auto result = fulgur::testing::run_command(command, 300);
    INFO(command << "\n" << result.output);
    REQUIRE(result.exit_code == 0);
    return result.output;
  };
  const std::string found = run("lr_find", dir.path().string(), "--lr_find.min_lr 1e-5");
  const size_t at = found.find("suggested lr: ");
  REQUIRE(at != std::string::npos);
  const double suggestion = std::stod(found.substr(at + 14));
  INFO("suggested lr " << suggestion);
  const std::string csv = read_file(dir / "lr_find.csv");
  CHECK(csv.rfind("lr,loss\n1e-05,", 0) == 0);
  // Nothing else is written: no run folder, no checkpoint.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);

  // Two epochs with the suggestion reach a good accuracy; with the sweep's first lr they do not.
  auto val_acc = [&](double lr, const std::string& name) {
    const std::string out = run("fit", (dir / name).string(),
                                fmt::format("--trainer.max_epochs 2 --model.lr {} --model.lr_step_size 0", lr));
    const size_t pos = out.find("val_acc=");
    REQUIRE(pos != std::string::npos);
    return std::stod(out.substr(pos + 8));
  };
  const double tuned = val_acc(suggestion, "tuned");
  const double untuned = val_acc(1e-5, "untuned");
  INFO("val_acc with the suggestion " << tuned << ", with 1e-5 " << untuned);
  CHECK(tuned > 0.9);
  CHECK(untuned < 0.5);

  const auto bad = fulgur::testing::run_command(std::string(FULGUR_BINARY_DIR) +
                                                    "/bin/cinic10 lr_find --data.root x --lr_find.mode cyclic",
                                                60);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output == "error: lr_find.mode: must be one of exponential, linear, got 'cyclic'\n");
}

TEST_CASE("scale_batch_size: power doubles up to max_val, binsearch bisects to it; the module is left as it was") {
  TempDir dir("scale-batch");
  torch::manual_seed(0);
  testing::RecordingModule model;
  std::vector<torch::Tensor> before;
  for (const auto& p : model.parameters()) before.push_back(p.detach().clone());
  const torch::Tensor rng = at::detail::getDefaultCPUGenerator().get_state();
  auto unchanged = [&] {
    size_t i = 0;
    for (const auto& p : model.parameters()) CHECK(torch::equal(p, before[i++]));
    CHECK(torch::equal(at::detail::getDefaultCPUGenerator().get_state(), rng));
  };
  const Tuner tuner(search_fit_options(dir));
  using Sizes = std::vector<int64_t>;

  // 100 examples; 64 is above max_val 40 and fails as an out-of-memory would.
  ResizableRegressionData power_data(100, 8);
  CHECK(tuner.scale_batch_size(model, power_data, ScaleBatchSizeOptions().max_val(40)) == 32);
  CHECK(power_data.train_batch_sizes == Sizes{2, 4, 8, 16, 32});
  CHECK(power_data.batch_size() == 32);
  unchanged();

  ResizableRegressionData binsearch_data(100, 8);
  CHECK(tuner.scale_batch_size(model, binsearch_data, ScaleBatchSizeOptions().mode(ScaleBatchSizeMode::BinSearch).max_val(40)) ==
        40);
  // 64 fails without a loader (as does every size above max_val); then bisection between 32 and 41.
  CHECK(binsearch_data.train_batch_sizes == Sizes{2, 4, 8, 16, 32, 36, 38, 39, 40});
  unchanged();

  // A first size that fails is halved until one runs; power then stops at it.
  ResizableRegressionData halving(100, 8);
  CHECK(tuner.scale_batch_size(model, halving, ScaleBatchSizeOptions().init_val(160).max_val(40)) == 40);
  CHECK(halving.train_batch_sizes == Sizes{40});

  // Never beyond the training set: 128 becomes 100, in both modes.
  for (const ScaleBatchSizeMode mode : {ScaleBatchSizeMode::Power, ScaleBatchSizeMode::BinSearch}) {
    ResizableRegressionData small(100, 8);
    CHECK(tuner.scale_batch_size(model, small, ScaleBatchSizeOptions().mode(mode).max_val(1000)) == 100);
    CHECK(small.train_batch_sizes == Sizes{2, 4, 8, 16, 32, 64, 100});
  }
  // max_trials counts the trials.
  ResizableRegressionData few(100, 8);
  CHECK(tuner.scale_batch_size(model, few, ScaleBatchSizeOptions().max_trials(3).max_val(1000)) == 8);
  unchanged();
  CHECK(std::filesystem::is_empty(dir.path()));

  // The next fit uses the size found: ceil(100 / 32) batches of 32.
  Trainer trainer(search_fit_options(dir).max_epochs(1));
  trainer.fit(model, power_data);
  CHECK(trainer.state().num_training_batches() == 4);
  CHECK(power_data.train_batch_sizes.back() == 32);
}

TEST_CASE("scale_batch_size: an out-of-memory error thrown inside a step ends that trial, as on a GPU") {
  TempDir dir("scale-batch-oom");
  // Above 24 examples a step fails as LibTorch's CUDA allocator (an OutOfMemoryError) or
  // cuDNN (a plain c10::Error naming its status) fails: the Trainer adds where it failed,
  // and the search must still see an out-of-memory error.
  struct Oom : testing::RecordingModule {
    bool cudnn = false;
    torch::Tensor training_step(const Batch& batch, int64_t idx) override {
      const int64_t n = batch.input.size(0);
      if (cudnn) TORCH_CHECK(n <= 24, "cuDNN error: CUDNN_STATUS_ALLOC_FAILED");
      TORCH_CHECK_WITH(OutOfMemoryError, n <= 24, "CUDA out of memory. Tried to allocate 4.00 GiB.");
      return testing::RecordingModule::training_step(batch, idx);
    }
  } model;
  const Tuner tuner(search_fit_options(dir));
  for (const bool cudnn : {false, true}) {
    model.cudnn = cudnn;
    ResizableRegressionData data(100, 8);
    CHECK(tuner.scale_batch_size(model, data, ScaleBatchSizeOptions().max_val(1000)) == 16);
    CHECK(data.train_batch_sizes == std::vector<int64_t>{2, 4, 8, 16, 32});
  }
  // Outside the search the error keeps its type and gains the place it happened.
  ResizableRegressionData data(100, 32);
  model.cudnn = false;
  Trainer trainer(search_fit_options(dir).max_epochs(1));
  CHECK_THROWS_WITH_AS(trainer.fit(model, data),
                       doctest::Contains("[Trainer::fit] rank 0: training_step at batch 0 of epoch 0 failed: CUDA out "
                                         "of memory. Tried to allocate 4.00 GiB."),
                       c10::OutOfMemoryError);
}

TEST_CASE("scale_batch_size: what it cannot search says so") {
  TempDir dir("scale-batch-errors");
  testing::RecordingModule model;
  ResizableRegressionData data(100, 8);
  const Tuner tuner(search_fit_options(dir));
  CHECK_THROWS_WITH_AS(tuner.scale_batch_size(model, data),
                       "[Tuner::scale_batch_size] max_val must be set on the CPU: no out-of-memory error ends the "
                       "search there",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(tuner.scale_batch_size(model, data, ScaleBatchSizeOptions().batch_arg_name("bs").max_val(8)),
                       "[Tuner::scale_batch_size] the data module has no batch size option 'bs' (batch_arg_name; "
                       "DataModule::batch_arg)",
                       std::invalid_argument);
  testing::RegressionData prepared(4, 0);  // batches made in advance: no size to change
  CHECK_THROWS_AS(tuner.scale_batch_size(model, prepared, ScaleBatchSizeOptions().max_val(8)),
                  std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_choice<ScaleBatchSizeMode>("linear"), doctest::Contains("must be one of power, binsearch"),
                       std::invalid_argument);
  // Only size 1 is under max_val 1: init_val 2 fails and is halved.
  CHECK(tuner.scale_batch_size(model, data, ScaleBatchSizeOptions().max_val(1)) == 1);
  CHECK(data.train_batch_sizes == std::vector<int64_t>{1});
  CHECK(data.batch_size() == 1);
}

TEST_CASE("scale_batch_size subcommand: prints the size and writes a config that sets it (the digits)") {
  const std::string root = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
  REQUIRE_MESSAGE(std::filesystem::exists(root + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("scale-batch-cli");
  const std::string command = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 scale_batch_size --config " +
                              FULGUR_SOURCE_DIR + "/examples/cinic10/digits.yaml --data.root " + root +
                              " --data.num_workers 0 --trainer.enable_progress_bar false --trainer.default_root_dir " +
                              dir.path().string() + " --scale_batch_size.max_val 20 --scale_batch_size.steps_per_trial 1";
  const auto result = fulgur::testing::run_command(command, 300);
  INFO(command << "\n" << result.output);
  REQUIRE(result.exit_code == 0);
  const std::string yaml = (dir / "scale_batch_size.yaml").string();
  CHECK(result.output.find("scale_batch_size: batch size 16 (data.batch_size); fit with it: --config " + yaml) !=
        std::string::npos);
  CHECK(read_file(yaml) == "data:\n  batch_size: 16\n");
  // The file is a --config: print_config shows the size it sets (digits.yaml says 32).
  const auto printed = fulgur::testing::run_command(
      std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 fit --config " + FULGUR_SOURCE_DIR +
          "/examples/cinic10/digits.yaml --config " + yaml + " --print_config",
      60);
  CHECK(printed.output.find("batch_size: 16") != std::string::npos);

  const auto cpu = fulgur::testing::run_command(std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 scale_batch_size --data.root " +
                                                    root + " --trainer.accelerator cpu",
                                                60);
  CHECK(cpu.exit_code == 2);
  CHECK(cpu.output.find("max_val must be set on the CPU") != std::string::npos);
}

TEST_CASE("plot_lr_find.py draws a real lr_find curve as a PNG") {
  TempDir dir("lr-find-plot");
  torch::manual_seed(0);
  testing::RecordingModule model;
  testing::RegressionData data(10, 0);
  auto finder = Tuner(search_fit_options(dir)).lr_find(model, data, LRFinderOptions().min_lr(1e-3).max_lr(1e3).num_training_steps(60));
  finder->write_csv(dir / "lr_find.csv");
  const auto suggestion = finder->suggestion();
  REQUIRE(suggestion);
  const std::string command = fmt::format("{} {}/scripts/plot_lr_find.py {} {}", FULGUR_PYTHON, FULGUR_SOURCE_DIR,
                                          (dir / "lr_find.csv").string(), *suggestion);
  const auto result = fulgur::testing::run_command(command, 120);
  INFO(command << "\n" << result.output);
  REQUIRE(result.exit_code == 0);
  const auto png = dir / "lr_find.png";
  CHECK(result.output.find(png.string() + "\n") != std::string::npos);
  REQUIRE(std::filesystem::exists(png));
  CHECK(std::filesystem::file_size(png) > 0);
  CHECK(read_file(png).rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  // PIL reads it back whole: a 640x480 RGBA image (matplotlib's default figure at dpi 100).
  const auto read = fulgur::testing::run_command(
      fmt::format("{} -c \"from PIL import Image; im = Image.open('{}'); im.load(); print(im.size, im.mode)\"",
                  FULGUR_PYTHON, png.string()),
      60);
  CHECK(read.exit_code == 0);
  CHECK(read.output.find("(640, 480) RGBA\n") != std::string::npos);
}

}  // namespace tuner_test
