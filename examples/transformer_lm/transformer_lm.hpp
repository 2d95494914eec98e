#pragma once

// A small decoder-only transformer language model over bytes: token and
// position embeddings, pre-norm blocks (causal self-attention, MLP), a
// final norm and a linear head, as the layers of a fulgur::PipelineModule,
// so under model_parallel.pipeline_parallel_size each rank builds and runs
// only its stages' layers. Each block is a fulgur::ShardedUnit, so
// under --strategy fsdp (FULL_SHARD) its parameters are gathered for its
// own forward and backward only. Its layers are fulgur's Shardable ones,
// so under --strategy model_parallel configure_model splits them over the
// tensor-parallel ranks (attention by heads, the MLP Megatron-style, the
// vocabulary of the embedding and the head), with sequence parallelism
// as an option, and ring attention over the context-parallel ranks.
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
    q = register_module("q", fulgur::ShardableLinear(dim, dim));
    k = register_module("k", fulgur::ShardableLinear(dim, dim));
    v = register_module("v", fulgur::ShardableLinear(dim, dim));
    proj = register_module("proj", fulgur::ShardableLinear(dim, dim));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    fc1 = register_module("fc1", fulgur::ShardableLinear(dim, 4 * dim));
    fc2 = register_module("fc2", fulgur::ShardableLinear(4 * dim, dim));
  }
  torch::Tensor forward(torch::Tensor x) {
    const torch::Tensor h = norm1->forward(x);
    // [B, T, H, D] -> [B, H, T, D]; under tensor parallelism H is this rank's heads.
    auto split_heads = [&](const torch::Tensor& t) { return t.view({t.size(0), t.size(1), heads, -1}).transpose(1, 2); };
    const torch::Tensor qh = split_heads(q->forward(h)), kh = split_heads(k->forward(h)), vh = split_heads(v->forward(h));
    // Under context parallelism the other ranks hold the rest of the sequence: ring attention.
    const torch::Tensor attended = cp ? fulgur::ring_attention(qh, kh, vh, *cp, /*causal=*/true)
                                      : at::scaled_dot_product_attention(qh, kh, vh, {}, 0.0, /*is_causal=*/true);
    x = x + proj->forward(attended.transpose(1, 2).reshape({attended.size(0), attended.size(2), -1}));
    return x + fc2->forward(torch::gelu(fc1->forward(norm2->forward(x))));
  }
  int64_t heads;
  std::shared_ptr<fulgur::ProcessGroup> cp;  // set under context parallelism
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  fulgur::ShardableLinear q{nullptr}, k{nullptr}, v{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(TransformerBlock);

// Layer 0: the token and position embeddings. Under context parallelism
// its input is this rank's tokens (two mirrored chunks of each sequence);
// under sequence parallelism its output is this rank's chunk of them.
struct EmbeddingsImpl : torch::nn::Module {
  EmbeddingsImpl(int64_t dim, int64_t context) {
    token = register_module("token", fulgur::ShardableEmbedding(256, dim));
    position = register_module("position", fulgur::ShardableEmbedding(context, dim));
  }
  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor positions = torch::arange(input.size(1), input.options());
    if (cp) positions = fulgur::context_parallel_positions(input.size(1) * cp->size(), cp->rank(), cp->size()).to(input.device());
    torch::Tensor x = token->forward(input) + position->forward(positions);
    if (tp && sequence_parallel) x = fulgur::split_to_group(x, 1, *tp);  // each rank its chunk of the sequence
    return x;
  }
  std::shared_ptr<fulgur::ProcessGroup> tp, cp;
  bool sequence_parallel = false;
  fulgur::ShardableEmbedding token{nullptr}, position{nullptr};
};
TORCH_MODULE(Embeddings);

// The last layer: the final norm and the head's logits (vocab-parallel under tp).
struct LMHeadImpl : torch::nn::Module {
  explicit LMHeadImpl(int64_t dim) {
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    head = register_module("head", fulgur::ShardableLinear(dim, 256));
  }
  torch::Tensor forward(const torch::Tensor& x) { return head->forward(norm->forward(x)); }
  torch::nn::LayerNorm norm{nullptr};
  fulgur::ShardableLinear head{nullptr};
};
TORCH_MODULE(LMHead);

// The model as layers (a fulgur::PipelineModule): the embeddings, the
// blocks, the head. Under model_parallel.pipeline_parallel_size each rank
// builds and runs only its stages' layers.
struct TransformerLM : fulgur::PipelineModule {
  /// `sgd`: plain SGD instead of AdamW, a step the cuda_graph option can capture.
  /// `sequence_parallel`: under tensor parallelism, the norms and residuals
  /// run on each rank's chunk of the sequence.
  TransformerLM(int64_t layers, int64_t dim, int64_t heads, int64_t context, double lr, bool sgd = false,
                bool sequence_parallel = false)
      : PipelineModule(layers + 2),
        dim(dim),
        heads(heads),
        context(context),
        lr(lr),
        sgd(sgd),
        sequence_parallel(sequence_parallel) {}
  torch::nn::AnyModule make_layer(int64_t index) override {
    if (index == 0) return torch::nn::AnyModule(Embeddings(dim, context));
    if (index == num_layers() - 1) return torch::nn::AnyModule(LMHead(dim));
    block_list.emplace_back(dim, heads);
    return torch::nn::AnyModule(fulgur::ShardedUnit<TransformerBlock>(block_list.back()));
  }
  // Under strategy model_parallel: the Megatron plan over the mesh's tp.
  void configure_model(fulgur::DeviceMesh& mesh) override {
    using fulgur::ColwiseParallel, fulgur::RowwiseParallel, fulgur::SequenceParallel, fulgur::Shard, fulgur::Replicate;
    PipelineModule::configure_model(mesh);  // builds the layers (on a pipeline: this rank's)
    auto embeddings = std::dynamic_pointer_cast<EmbeddingsImpl>(layer(0));
    if (mesh.spans("cp")) {
      cp = mesh.share_group("cp");
      for (auto& block : block_list) block->cp = cp;
      if (embeddings) embeddings->cp = cp;
    }
    if (!mesh.spans("tp")) return;
    tp = mesh.share_group("tp");
    for (auto& block : block_list) block->heads = mesh.split("tp", block->heads, "heads");
    if (embeddings) {
      embeddings->tp = tp;
      embeddings->sequence_parallel = sequence_parallel;
    }
    const fulgur::Layout between = sequence_parallel ? Shard(1) : Replicate();
    fulgur::ParallelPlan plan{
        {"layers.0.token", RowwiseParallel(Replicate(), Replicate())},     // vocab-parallel
        {"layers.0.position", RowwiseParallel(Replicate(), Replicate())},  // each rank a share of the positions' rows
        {"layers.*.module.q", ColwiseParallel(between)},
        {"layers.*.module.k", ColwiseParallel(between)},
        {"layers.*.module.v", ColwiseParallel(between)},
        {"layers.*.module.proj", RowwiseParallel(Shard(-1), between)},
        {"layers.*.module.fc1", ColwiseParallel(between)},
        {"layers.*.module.fc2", RowwiseParallel(Shard(-1), between)},
        {"layers.*.head", ColwiseParallel(between, Shard(-1))},  // vocab-parallel logits: never gathered
    };
    if (sequence_parallel) {
      for (const char* name : {"layers.*.module.norm1", "layers.*.module.norm2", "layers.*.norm"}) {
        plan.emplace_back(name, SequenceParallel());
      }
    }
    fulgur::parallelize_module(*this, mesh, plan);
  }
  // Under context parallelism: this rank's tokens of each sequence, and their targets.
  torch::Tensor layer_input(const fulgur::Batch& b) override { return this_rank_tokens(b.input); }
  torch::Tensor loss(const torch::Tensor& logits, const fulgur::Batch& b) override {
    const torch::Tensor target = this_rank_tokens(b.target);
    if (tp) return fulgur::vocab_parallel_cross_entropy(logits, target, *tp);
    return torch::nn::functional::cross_entropy(logits.reshape({-1, 256}), target.reshape({-1}));
  }
  torch::Tensor this_rank_tokens(const torch::Tensor& tokens) const {
    if (!cp) return tokens;
    const torch::Tensor mine = fulgur::context_parallel_positions(tokens.size(1), cp->rank(), cp->size());
    return tokens.index_select(1, mine.to(tokens.device()));
  }
  // Each context-parallel rank's loss is its tokens' mean: what is logged is the whole sequence's.
  void log_loss(const std::string& stage, const torch::Tensor& loss) override {
    if (!cp) return PipelineModule::log_loss(stage, loss);
    torch::Tensor mean = loss.detach().clone();
    cp->all_reduce(mean, fulgur::ReduceOp::Sum);
    PipelineModule::log_loss(stage, mean / static_cast<double>(cp->size()));
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

  int64_t dim, heads, context;
  double lr;
  bool sgd;
  bool sequence_parallel;
  std::shared_ptr<fulgur::ProcessGroup> tp, cp;  // set under tensor, context parallelism
  std::vector<TransformerBlock> block_list;      // this rank's blocks
  int64_t steps = 0;
  double timed_seconds = 0.0;
  std::chrono::steady_clock::time_point last_start;
};

}  // namespace examples
