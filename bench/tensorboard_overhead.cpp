// What TensorBoard logging at every step costs the demo: the digits CNN of
// `make demo` (examples/cinic10 with digits.yaml's model and data options)
// trained for alternating epochs without a logger and with a
// TensorBoardLogger and log_every_n_steps 1 (train_loss and epoch written
// at every optimizer step). The median epoch of each is compared; epochs
// alternate so machine noise hits both. Wall time and the process's CPU
// time are both compared: on a machine shared with other work the CPU time
// is the steadier measure. Last, the cost of one log_metrics call on the
// training thread is timed alone and set against the step time.
//
//   build/bin/tensorboard_overhead [--epochs 6] [--data data/digits-cinic]
#include "../examples/cinic10/lit_classifier.hpp"
#include "bench_paths.hpp"
#include "bench_support.hpp"

#include <fulgur/datamodules/datasets/cinic10.hpp>
#include <fulgur/fulgur.hpp>

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <iostream>

// One of the programs in a multi-call binary (started through bin/tensorboard_overhead).
namespace tensorboard_overhead {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;
using fulgur::bench::median;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Times each training epoch (validation excluded): wall and process CPU.
struct EpochTimer : fulgur::Callback {
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;
  Clock::time_point start;
  double cpu_start = 0;
  std::string state_key() const override { return "EpochTimer"; }
  void on_train_epoch_start(fulgur::Trainer&, fulgur::LightningModule&) override {
    start = Clock::now();
    cpu_start = process_cpu_seconds();
  }
  void on_train_epoch_end(fulgur::Trainer&, fulgur::LightningModule&) override {
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    cpu_seconds.push_back(process_cpu_seconds() - cpu_start);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t epochs = std::stoll(flag(argc, argv, "--epochs", "6"));
  const std::string root = flag(argc, argv, "--data", std::string(fulgur::bench::kSourceDir) + "/data/digits-cinic");
  const auto logs = std::filesystem::temp_directory_path() / fmt::format("tensorboard_overhead_{}", getpid());
  torch::manual_seed(42);

  // digits.yaml's model and data.
  examples::LitClassifier model(examples::LitClassifierOptions().lr_step_size(10));
  fulgur::CINIC10 data(fulgur::CINIC10Options(root).batch_size(32).num_workers(2));

  auto off = std::make_shared<EpochTimer>();
  auto on = std::make_shared<EpochTimer>();
  std::shared_ptr<fulgur::TensorBoardLogger> logger;
  int64_t steps_per_epoch = 0;
  auto run_epoch = [&](bool tensorboard) {
    auto options = fulgur::TrainerOptions()
                       .max_epochs(1)
                       .accelerator(fulgur::AcceleratorKind::Cpu)
                       .enable_progress_bar(false)
                       .num_sanity_val_steps(0)
                       .limit_val_batches(int64_t{0})
                       .log_every_n_steps(1)
                       .logger(tensorboard);
    std::vector<std::shared_ptr<fulgur::Logger>> loggers;
    if (tensorboard) {
      logger = std::make_shared<fulgur::TensorBoardLogger>(logs);
      loggers.push_back(logger);
    }
    fulgur::Trainer trainer(options, {tensorboard ? on : off}, loggers);
    trainer.fit(model, data);
    steps_per_epoch = trainer.state().num_training_batches();
  };

  run_epoch(false);  // warm-up: allocator, thread pool, page cache
  run_epoch(true);
  off->seconds.clear();
  on->seconds.clear();
  off->cpu_seconds.clear();
  on->cpu_seconds.clear();
  for (int64_t e = 0; e < epochs; ++e) {
    // ABBA order, so a slow drift of the machine favours neither side.
    const bool first = e % 2 == 0;
    run_epoch(!first);
    run_epoch(first);
  }
  const double off_rate = static_cast<double>(steps_per_epoch) / median(off->seconds);
  const double on_rate = static_cast<double>(steps_per_epoch) / median(on->seconds);
  const double cpu_ratio = median(off->cpu_seconds) / median(on->cpu_seconds);

  // One log_metrics call, as the Trainer makes it at every step, alone.
  constexpr int64_t kCalls = 20000;
  fulgur::TensorBoardLogger alone(logs, "calls");
  const auto calls_start = Clock::now();
  for (int64_t i = 0; i < kCalls; ++i) alone.log_metrics({{"epoch", 0.0}, {"train_loss", 1.0 / (i + 1)}}, i);
  const double call_us = 1e6 * std::chrono::duration<double>(Clock::now() - calls_start).count() / kCalls;
  alone.finalize("success");
  const double step_us = 1e6 * median(off->seconds) / static_cast<double>(steps_per_epoch);

  std::cout << fmt::format(
                   "tensorboard_overhead: logging every step {:.1f} it/s, no logger {:.1f} it/s, ratio {:.3f}; "
                   "CPU-time ratio {:.3f}",
                   on_rate, off_rate, on_rate / off_rate, cpu_ratio)
            << std::endl;
  std::cout << fmt::format("tensorboard_log_call: {:.2f} us per log_metrics call, {:.4f} % of a {:.0f} us step",
                           call_us, 100.0 * call_us / step_us, step_us)
            << std::endl;
  std::cout << fmt::format("  (digits CNN, batch 32, {} steps/epoch, {} epochs each, median epoch)", steps_per_epoch,
                           epochs)
            << std::endl;
  std::filesystem::remove_all(logs);
  return 0;
}

}  // namespace tensorboard_overhead
