// A training program for strategy model_parallel's tests: a one-block
// decoder (vocab-parallel embedding and loss, attention split by heads, an
// MLP split Megatron-style, sequence parallelism as an option, ring
// attention over the context-parallel ranks) written
// once with fulgur's Shardable layers and a ParallelPlan, so the same
// program trains on one process and on any tp x dp mesh. Rank 0 writes the
// final parameters (gathered whole) to --model.output; every rank writes
// its copies of the parameters that tp leaves whole (the norms, the
// row-split biases) to --model.output.rank<r>.
//
//   model_parallel_probe fit --trainer.devices 2 --trainer.strategy model_parallel \
//       --trainer.model_parallel.tensor_parallel_size 2 --model.output params.pt
//   model_parallel_probe runs 2 FILE   (FILE's command lines in one launch of 2 ranks, probe_runs.hpp)
#include "probe_runs.hpp"

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <csignal>

#include <fstream>

// One of the programs in a multi-call binary (started through bin/model_parallel_probe).
namespace model_parallel_probe {

namespace {

namespace check = fulgur::check;

constexpr int64_t kVocab = 16;

#define MODEL_PARALLEL_PROBE_MODEL_OPTIONS(X)                                                     \
  X(std::string, output, "", "rank 0 writes the final parameters there", check::Any{})             \
  X(int64_t, dim, 16, "model width", check::AtLeast{1})                                            \
  X(int64_t, heads, 4, "attention heads", check::AtLeast{1})                                       \
  X(bool, sequence_parallel, false, "norms and residuals on sequence chunks", check::Any{})         \
  X(double, lr, 0.01, "Adam's learning rate", check::Positive{})                                     \
  X(int64_t, signal_step, -1, "global rank 1 raises SIGTERM during this step (-1: never)", check::Any{})

struct ProbeModelOptions {
  FULGUR_OPTIONS(ProbeModelOptions, MODEL_PARALLEL_PROBE_MODEL_OPTIONS)
};

struct TinyLM : fulgur::LightningModule {
  using Options = ProbeModelOptions;
  explicit TinyLM(const ProbeModelOptions& options) : o(options), heads(options.heads()) {
    const int64_t d = o.dim();
    token = register_module("token", fulgur::ShardableEmbedding(kVocab, d));
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    q = register_module("q", fulgur::ShardableLinear(d, d));
    // No key bias: its gradient is zero but for rounding, which Adam would magnify.
    k = register_module("k", fulgur::ShardableLinear(torch::nn::LinearOptions(d, d).bias(false)));
    v = register_module("v", fulgur::ShardableLinear(d, d));
    proj = register_module("proj", fulgur::ShardableLinear(d, d));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    up = register_module("up", fulgur::ShardableLinear(d, 2 * d));
    down = register_module("down", fulgur::ShardableLinear(2 * d, d));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    head = register_module("head", fulgur::ShardableLinear(torch::nn::LinearOptions(d, kVocab).bias(false)));
  }

  void configure_model(fulgur::DeviceMesh& mesh) override {
    using fulgur::ColwiseParallel, fulgur::RowwiseParallel, fulgur::SequenceParallel, fulgur::Shard,
        fulgur::Replicate;
    heads = mesh.split("tp", o.heads(), "heads");
    tp = mesh.spans("tp") ? mesh.share_group("tp") : nullptr;
    cp = mesh.spans("cp") ? mesh.share_group("cp") : nullptr;
    const bool sp = o.sequence_parallel();
    // Sequence parallel: activations between the split layers are [batch, seq / tp, dim].
    const fulgur::Layout between = sp ? Shard(1) : Replicate();
    fulgur::ParallelPlan plan{
        {"token", RowwiseParallel(Replicate(), between)},
        {"q", ColwiseParallel(between)},
        {"k", ColwiseParallel(between)},
        {"v", ColwiseParallel(between)},
        {"proj", RowwiseParallel(Shard(-1), between)},
        {"up", ColwiseParallel(between)},
        {"down", RowwiseParallel(Shard(-1), between)},
        {"head", ColwiseParallel(between, Shard(-1))},  // vocab-parallel logits
    };
    if (sp) {
      for (const char* name : {"norm1", "norm2", "norm"}) plan.emplace_back(name, SequenceParallel());
    }
    fulgur::parallelize_module(*this, mesh, plan);
  }

  torch::Tensor loss_of(const fulgur::Batch& b) {
    torch::Tensor input = b.input, target = b.target;
    if (cp) {  // this rank's tokens of every sequence (two mirrored chunks)
      const torch::Tensor mine = fulgur::context_parallel_positions(input.size(1), cp->rank(), cp->size());
      input = input.index_select(1, mine);
      target = target.index_select(1, mine);
    }
    torch::Tensor x = token->forward(input);
    const torch::Tensor h = norm1->forward(x);
    auto split_heads = [&](const torch::Tensor& t) {
      return t.view({t.size(0), t.size(1), heads, -1}).transpose(1, 2);
    };
    const torch::Tensor qh = split_heads(q->forward(h)), kh = split_heads(k->forward(h)), vh = split_heads(v->forward(h));
    const torch::Tensor attended = cp ? fulgur::ring_attention(qh, kh, vh, *cp, /*causal=*/true)
                                      : at::scaled_dot_product_attention(qh, kh, vh, {}, 0.0, /*is_causal=*/true);
    x = x + proj->forward(attended.transpose(1, 2).reshape({attended.size(0), attended.size(2), -1}));
    x = x + down->forward(torch::gelu(up->forward(norm2->forward(x))));
    const torch::Tensor logits = head->forward(norm->forward(x));
    if (tp) return fulgur::vocab_parallel_cross_entropy(logits, target, *tp);
    return torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}), target.reshape({-1}));
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    if (o.signal_step() >= 0 && trainer()->state().global_step() == o.signal_step() && global_rank() == 1) std::raise(SIGTERM);
    const torch::Tensor loss = loss_of(b);
    log("train_loss", loss);
    return loss;
  }
  void validation_step(const fulgur::Batch& b, int64_t) override {
    log("val_loss", loss_of(b), {.sync_dist = true});
    // Summed over the data-parallel replicas: a tp block counts its batch once.
    log("val_tokens", torch::tensor(static_cast<double>(b.target.numel())),
        {.reduce = fulgur::ReduceOp::Sum, .sync_dist = true});
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(o.lr())), std::nullopt};
  }
  void on_fit_end() override {
    if (o.output().empty()) return;
    fulgur::Strategy& strategy = trainer()->strategy();
    std::vector<torch::Tensor> whole, replicated;
    for (const auto& item : named_parameters()) {
      const torch::Tensor& p = item.value();
      whole.push_back(strategy.whole_tensor(p, p).cpu().reshape({-1}));  // every rank takes part
      const std::string& name = item.key();
      if (name.rfind("norm", 0) == 0 || name == "proj.bias" || name == "down.bias") replicated.push_back(whole.back());
    }
    auto write = [](const std::string& path, const std::vector<torch::Tensor>& parts) {
      const auto bytes = torch::pickle_save(torch::cat(parts));
      std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    write(o.output() + ".rank" + std::to_string(global_rank()), replicated);
    if (trainer()->is_global_zero()) write(o.output(), whole);
  }

  const ProbeModelOptions o;
  int64_t heads;
  std::shared_ptr<fulgur::ProcessGroup> tp, cp;
  fulgur::ShardableEmbedding token{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm{nullptr};
  fulgur::ShardableLinear q{nullptr}, k{nullptr}, v{nullptr}, proj{nullptr}, up{nullptr}, down{nullptr}, head{nullptr};
};

#define MODEL_PARALLEL_PROBE_DATA_OPTIONS(X)                              \
  X(int64_t, batch_size, 8, "sequences per batch and process", check::AtLeast{1}) \
  X(int64_t, samples, 32, "sequences in the dataset", check::AtLeast{1})  \
  X(int64_t, length, 8, "tokens per sequence", check::AtLeast{1})

struct ProbeDataOptions {
  FULGUR_OPTIONS(ProbeDataOptions, MODEL_PARALLEL_PROBE_DATA_OPTIONS)
};

struct ProbeData : fulgur::DataModule {
  using Options = ProbeDataOptions;
  explicit ProbeData(const ProbeDataOptions& o) : o(o) {}
  std::shared_ptr<fulgur::DataLoader> loader() {
    // The same sequences on every rank and run: each token's successor is
    // the next token plus one (mod the vocabulary), with some noise.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
    const torch::Tensor x = torch::randint(0, kVocab, {o.samples(), o.length()}, gen);
    const torch::Tensor noise = torch::randint(0, 4, {o.samples(), o.length()}, gen);
    const torch::Tensor y = (x + 1 + (noise == 0).to(torch::kLong)) % kVocab;
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<fulgur::TensorDataset>(x, y),
                                                   fulgur::DatasetLoaderOptions(o.batch_size()).seed(0));
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(); }
  const ProbeDataOptions o;
};

}  // namespace

int main(int argc, char** argv) {
  const auto run = [](int n, const char* const* args) { return fulgur::cli::run<TinyLM, ProbeData>(n, args); };
  if (argc > 1 && std::string(argv[1]) == "runs") return fulgur::testing::run_probe_list(argc, argv, run);
  return run(argc, argv);
}

}  // namespace model_parallel_probe
