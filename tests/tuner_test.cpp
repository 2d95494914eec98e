// Tuner::lr_find: the range test's curve and its stop on divergence, the
// module left as it was found, and on the digits (the lr_find subcommand of
// the example) a suggestion with which a short fit reaches a good accuracy.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/callbacks/tuner.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

TEST_CASE("lr_find: the sweep stops on divergence; the module is left as it was") {
  TempDir dir("tuner");
  const auto options = TrainerOptions()
                           .default_root_dir(dir.path().string())
                           .accelerator("cpu")
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
  LRFinder linear(LRFinderOptions().min_lr(0.1).max_lr(1.1).num_training_steps(10).mode("linear"));
  CHECK(linear.learning_rate(0) == doctest::Approx(0.1));
  CHECK(linear.learning_rate(5) == doctest::Approx(0.6));
  LRFinder exponential(LRFinderOptions().min_lr(1e-4).max_lr(1).num_training_steps(4));
  CHECK(exponential.learning_rate(2) == doctest::Approx(1e-2));
  CHECK_FALSE(exponential.suggestion());  // no points yet
  CHECK_THROWS_WITH_AS(LRFinder(LRFinderOptions().min_lr(1).max_lr(0.5)), "[LRFinder] max_lr (0.5) must be > min_lr (1)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LRFinder(LRFinderOptions().mode("cyclic")), doctest::Contains("mode must be one of"),
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
  CHECK(bad.output == "error: lr_find.mode: must be one of exponential, linear, got cyclic\n");
}
