// The Trainer's per-step cost against a hand-written LibTorch loop: the same
// MLP, the same in-memory batches, the same optimizer and thread count, in
// one process. Epochs of the two alternate (raw, ours, raw, ours, ...) so
// machine noise hits both; the median epoch of each is compared.
//
//   build/bin/trainer_overhead [--epochs 15] [--batches 200] [--batch_size 64] [--threads 2]
#include "bench_support.hpp"
#include "mlp_module.hpp"

#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <fmt/format.h>

#include <chrono>
#include <iostream>

// One of the programs in a multi-call binary (started through bin/trainer_overhead).
namespace trainer_overhead {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;
using fulgur::bench::median;

torch::nn::Sequential make_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(784, 256), torch::nn::ReLU(), torch::nn::Linear(256, 256),
                               torch::nn::ReLU(), torch::nn::Linear(256, 10));
}

std::vector<fulgur::Batch> make_batches(int64_t count, int64_t batch_size) {
  std::vector<fulgur::Batch> batches;
  for (int64_t i = 0; i < count; ++i) {
    batches.push_back({torch::randn({batch_size, 784}), torch::randint(0, 10, {batch_size})});
  }
  return batches;
}

struct BenchData : fulgur::DataModule {
  explicit BenchData(std::vector<fulgur::Batch> batches)
      : loader(std::make_shared<fulgur::TensorBatchLoader>(std::move(batches))) {}
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader; }
  std::shared_ptr<fulgur::DataLoader> loader;
};

/// Times each of the Trainer's epochs.
struct EpochTimer : fulgur::Callback {
  std::vector<double> seconds;
  Clock::time_point start;
  std::string state_key() const override { return "EpochTimer"; }
  void on_train_epoch_start(fulgur::Trainer&, fulgur::LightningModule&) override { start = Clock::now(); }
  void on_train_epoch_end(fulgur::Trainer&, fulgur::LightningModule&) override {
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
};

/// One epoch of the plain loop every LibTorch user writes.
double raw_epoch(torch::nn::Sequential& net, torch::optim::Optimizer& optimizer,
                 const std::vector<fulgur::Batch>& batches) {
  const auto start = Clock::now();
  for (const auto& b : batches) {
    optimizer.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(b.input), b.target);
    loss.backward();
    optimizer.step();
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t epochs = flag(argc, argv, "--epochs", 15);
  const int64_t num_batches = flag(argc, argv, "--batches", 200);
  const int64_t batch_size = flag(argc, argv, "--batch_size", 64);
  const int64_t threads = flag(argc, argv, "--threads", 2);
  torch::set_num_threads(static_cast<int>(threads));
  torch::manual_seed(0);
  const auto batches = make_batches(num_batches, batch_size);

  torch::nn::Sequential raw_net = make_mlp();
  torch::optim::SGD raw_optimizer(raw_net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  fulgur::bench::MlpModule module(make_mlp());
  BenchData data(batches);
  auto timer = std::make_shared<EpochTimer>();

  raw_epoch(raw_net, raw_optimizer, batches);  // warm-up: allocator, thread pool
  std::vector<double> raw_seconds;
  // Alternate: one raw epoch, then one Trainer epoch (fit resumes the count).
  for (int64_t e = 0; e <= epochs; ++e) {
    raw_seconds.push_back(raw_epoch(raw_net, raw_optimizer, batches));
    fulgur::Trainer trainer(fulgur::TrainerOptions()
                                .max_epochs(1)
                                .accelerator(fulgur::AcceleratorKind::Cpu)
                                .logger(false)
                                .enable_progress_bar(false)
                                .num_sanity_val_steps(0),
                            {timer});
    trainer.fit(module, data);
  }
  timer->seconds.erase(timer->seconds.begin());  // the Trainer's own warm-up epoch
  raw_seconds.erase(raw_seconds.begin());

  const double ours = static_cast<double>(num_batches) / median(timer->seconds);
  const double raw = static_cast<double>(num_batches) / median(raw_seconds);
  std::cout << fmt::format("trainer_overhead: ours {:.1f} it/s, raw {:.1f} it/s, ratio {:.3f}", ours, raw, ours / raw)
            << std::endl;
  std::cout << fmt::format("  (MLP 784-256-256-10, batch {}, {} batches/epoch, {} epochs each, {} threads)",
                           batch_size, num_batches, epochs, threads)
            << std::endl;
  return 0;
}

}  // namespace trainer_overhead
