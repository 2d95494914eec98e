// The floor under any trainer built on LibTorch's kernels: the vs_lightning
// cases' work as a plain LibTorch loop with nothing else. Same model
// (create_model), same SGD settings and thread count, the same number of
// training steps and evaluation batches (sanity check, then each epoch's
// training and validation), but on random batches made in memory before the
// timer starts, so no files, decoding, logging, callbacks or checkpoints.
// fulgur's host caching allocator is installed as the Trainer installs it.
// vs_lightning/run.sh times it as a whole process, like the two sides it
// compares; Lightning's time over this one is the most any LibTorch-based
// trainer could reach against Lightning on that case.
//
//   build/bin/raw_loop [--arch resnet18_cifar] [--batch_size 128] [--epochs 2]
//                      [--train_batches 6] [--val_batches 2] [--sanity_batches 2]
//                      [--threads 2] [--image_size 32] [--classes 10] [--channels_last 0]
#include "bench_support.hpp"

#include <fulgur/fulgur.hpp>
#include <fulgur/modules/models/create_model.hpp>
#include <fulgur/strategies/cuda/host_caching_allocator.hpp>

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <string>

// One of the programs in a multi-call binary (started through bin/raw_loop).
namespace raw_loop {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;

/// Forward passes in eval mode without autograd, as a validation loop runs.
void evaluate(torch::nn::AnyModule& model, const std::vector<fulgur::Batch>& batches, int64_t count) {
  c10::InferenceMode inference;
  model.ptr()->eval();
  for (int64_t i = 0; i < count; ++i) {
    const auto& b = batches[static_cast<size_t>(i) % batches.size()];
    const torch::Tensor logits = model.forward(b.input);
    torch::nn::functional::cross_entropy(logits, b.target).item<float>();
  }
  model.ptr()->train();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string arch = flag(argc, argv, "--arch", std::string("resnet18_cifar"));
  const int64_t batch_size = flag(argc, argv, "--batch_size", 128);
  const int64_t epochs = flag(argc, argv, "--epochs", 2);
  const int64_t train_batches = flag(argc, argv, "--train_batches", 6);
  const int64_t val_batches = flag(argc, argv, "--val_batches", 2);
  const int64_t sanity_batches = flag(argc, argv, "--sanity_batches", 2);
  const int64_t image_size = flag(argc, argv, "--image_size", 32);
  const int64_t classes = flag(argc, argv, "--classes", 10);
  torch::set_num_threads(static_cast<int>(flag(argc, argv, "--threads", 2)));
  fulgur::HostCachingAllocator::install();
  torch::manual_seed(0);

  std::vector<fulgur::Batch> batches;
  for (int64_t i = 0; i < train_batches; ++i) {
    batches.push_back({torch::randn({batch_size, 3, image_size, image_size}), torch::randint(0, classes, {batch_size})});
  }
  fulgur::models::ModelOptions model_options;
  model_options.channels_last = flag(argc, argv, "--channels_last", 0) != 0;
  torch::nn::AnyModule model = fulgur::models::create_model(arch, classes, 3, model_options);
  torch::optim::SGD optimizer(model.ptr()->parameters(),
                              torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.0005));

  const auto start = Clock::now();
  evaluate(model, batches, sanity_batches);
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    for (const auto& b : batches) {
      optimizer.zero_grad();
      const torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(b.input), b.target);
      loss.backward();
      optimizer.step();
      loss.item<float>();  // a trainer reads the loss for its log
    }
    evaluate(model, batches, val_batches);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("raw_loop[{}]: {:.2f} s for {} epochs of {} training and {} validation batches of {}, "
                           "{} sanity batches",
                           arch, seconds, epochs, train_batches, val_batches, batch_size, sanity_batches)
            << std::endl;
  return 0;
}

}  // namespace raw_loop
