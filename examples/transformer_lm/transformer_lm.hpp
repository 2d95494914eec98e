#pragma once

// A small decoder-only transformer language model over bytes: token and
// position embeddings, pre-norm blocks (causal self-attention, MLP), a
// final norm and a linear head. Each block is a fulgur::ShardedUnit, so
// under --strategy fsdp (FULL_SHARD) its parameters are gathered for its
// own forward and backward only.
#include <fulgur/fulgur.hpp>
#include <fulgur/strategies/cuda/cuda_device_stats.hpp>
#include <fulgur/trainer/training_state_bytes.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <iostream>

namespace examples {

struct TransformerBlockImpl : torch::nn::Module {
  TransformerBlockImpl(int64_t dim, int64_t heads) : heads(heads) {
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    qkv = register_module("qkv", torch::nn::Linear(dim, 3 * dim));
    proj = register_module("proj", torch::nn::Linear(dim, dim));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
    fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
  }
  torch::Tensor forward(torch::Tensor x) {
    const int64_t batch = x.size(0), time = x.size(1), dim = x.size(2);
    // [B, T, 3, H, D] -> three [B, H, T, D]
    const auto parts = qkv->forward(norm1->forward(x)).view({batch, time, 3, heads, dim / heads}).permute({2, 0, 3, 1, 4});
    const torch::Tensor attended = at::scaled_dot_product_attention(parts[0], parts[1], parts[2], {}, 0.0,
                                                                    /*is_causal=*/true);
    x = x + proj->forward(attended.transpose(1, 2).reshape({batch, time, dim}));
    return x + fc2->forward(torch::gelu(fc1->forward(norm2->forward(x))));
  }
  int64_t heads;
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(TransformerBlock);

struct TransformerLM : fulgur::LightningModule {
  /// `sgd`: plain SGD instead of AdamW, a step the cuda_graph option can capture.
  TransformerLM(int64_t layers, int64_t dim, int64_t heads, int64_t context, double lr, bool sgd = false)
      : lr(lr), sgd(sgd) {
    token = register_module("token", torch::nn::Embedding(256, dim));
    position = register_module("position", torch::nn::Embedding(context, dim));
    blocks = register_module("blocks", torch::nn::Sequential());
    for (int64_t i = 0; i < layers; ++i) {
      blocks->push_back(fulgur::ShardedUnit<TransformerBlock>(TransformerBlock(dim, heads)));
    }
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    head = register_module("head", torch::nn::Linear(dim, 256));
  }
  torch::Tensor loss_of(const fulgur::Batch& b) {
    const auto positions = torch::arange(b.input.size(1), b.input.options());
    torch::Tensor x = token->forward(b.input) + position->forward(positions);
    const torch::Tensor logits = head->forward(norm->forward(blocks->forward(x)));
    return torch::nn::functional::cross_entropy(logits.reshape({-1, 256}), b.target.reshape({-1}));
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor loss = loss_of(b);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  void validation_step(const fulgur::Batch& b, int64_t) override {
    log("val_loss", loss_of(b), {.sync_dist = true});
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    if (sgd) return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(lr)), std::nullopt};
    return {std::make_shared<torch::optim::AdamW>(parameters(), torch::optim::AdamWOptions(lr).weight_decay(0.01)),
            std::nullopt};
  }
  // Step time (after two warm-up steps), what a rank keeps between steps,
  // its peak CUDA memory (torch.cuda.max_memory_allocated; 0 on the CPU)
  // and its peak resident memory: one line per rank at the end of fit.
  void on_train_batch_start(const fulgur::Batch&, int64_t) override {
    const auto now = std::chrono::steady_clock::now();
    if (++steps > 3) timed_seconds += std::chrono::duration<double>(now - last_start).count();
    last_start = now;
  }
  void on_fit_end() override {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const int64_t state = fulgur::training_state_bytes(trainer()->strategy(), *this, trainer()->optimizers());
    const torch::Device device = trainer()->strategy().root_device();
    double peak_cuda = 0.0;
    if (device.is_cuda()) {
      const auto stats = fulgur::CudaDeviceStats::memory_stats(device.has_index() ? device.index() : 0);
      const auto found = stats.find("allocated_bytes.all.peak");
      if (found != stats.end()) peak_cuda = found->second;
    }
    // peak_cuda_mib last: bench/sharding.sh reads the fields before it by position.
    std::cout << "transformer_lm rank " << global_rank() << ": state_bytes " << state << " peak_rss_mib "
              << usage.ru_maxrss / 1024 << " step_s "
              << (steps > 3 ? timed_seconds / static_cast<double>(steps - 3) : 0.0) << " peak_cuda_mib "
              << static_cast<int64_t>(peak_cuda / (1024.0 * 1024.0)) << std::endl;
  }

  double lr;
  bool sgd;
  int64_t steps = 0;
  double timed_seconds = 0.0;
  std::chrono::steady_clock::time_point last_start;
  torch::nn::Embedding token{nullptr}, position{nullptr};
  torch::nn::Sequential blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
};

}  // namespace examples
