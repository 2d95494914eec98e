// A training program for the fully sharded strategy's tests: an MLP with
// parameters that do not split evenly over the ranks (5 output rows, a
// 1-element scale), Adam or SGD, automatic or manual optimization, driven
// by fulgur's CLI. Rank 0 writes the final parameters (gathered whole) to
// --model.output; every rank writes, per parameter, its numel and its
// optimizer state's numel, and its training state's bytes, to
// --model.state_file.<rank>.
//
//   fsdp_probe fit --trainer.devices 2 --trainer.strategy fsdp --model.output params.pt
//   fsdp_probe runs 2 FILE   (FILE's command lines in one launch of 2 ranks, probe_runs.hpp)
#include "probe_runs.hpp"

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>
#include <fulgur/strategies/sharding/sharded_unit.hpp>
#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>
#include <fulgur/strategies/sharding/sharded_reducer.hpp>
#include <fulgur/trainer/training_state_bytes.hpp>

#include <fstream>

// One of the programs in a multi-call binary (started through bin/fsdp_probe).
namespace fsdp_probe {

namespace {

namespace check = fulgur::check;

enum class ProbeOptimizer { Adam, SGD };
std::vector<std::string> option_choices(ProbeOptimizer) { return {"adam", "sgd"}; }

#define FSDP_PROBE_MODEL_OPTIONS(X)                                                                          \
  X(std::string, output, "", "rank 0 writes the final parameters there", check::Any{})                       \
  X(std::string, state_file, "", "every rank writes its parameters' and optimizer state's sizes to it.<rank>", \
    check::Any{})                                                                                              \
  X(int64_t, hidden, 12, "hidden units", check::AtLeast{1})                                                  \
  X(ProbeOptimizer, optimizer, ProbeOptimizer::Adam, "adam or sgd (momentum 0.9)", check::Any{})           \
  X(double, lr, 0.05, "learning rate", check::Positive{})                                                    \
  X(bool, manual, false, "manual optimization (manual_backward, clip_gradients, step)", check::Any{})        \
  X(double, manual_clip, 0.0, "manual optimization: clip the gradient norm to this (0 = no)", check::Any{})   \
  X(bool, batch_norm, false, "a BatchNorm1d after the first layer", check::Any{})                           \
  X(bool, wrap, false, "each Linear in a fulgur::ShardedUnit (gathered by its own forward)", check::Any{})

struct FSDPProbeModelOptions {
  FULGUR_OPTIONS(FSDPProbeModelOptions, FSDP_PROBE_MODEL_OPTIONS)
};

struct FSDPProbeModel : fulgur::LightningModule {
  using Options = FSDPProbeModelOptions;
  explicit FSDPProbeModel(const FSDPProbeModelOptions& options) : o(options) {
    torch::nn::Sequential layers;
    auto linear = [&](int64_t in, int64_t out) {
      if (o.wrap()) {
        layers->push_back(fulgur::ShardedUnit<torch::nn::Linear>(torch::nn::Linear(in, out)));
      } else {
        layers->push_back(torch::nn::Linear(in, out));
      }
    };
    linear(8, o.hidden());
    if (o.batch_norm()) layers->push_back(torch::nn::BatchNorm1d(o.hidden()));
    layers->push_back(torch::nn::Tanh());
    linear(o.hidden(), o.hidden());
    layers->push_back(torch::nn::Tanh());
    linear(o.hidden(), 5);  // 5 rows: padded on 2 and 3 ranks
    net = register_module("net", layers);
    scale = register_parameter("scale", torch::ones({1}));  // 1 row: rank 1 and up own none
    automatic_optimization(!o.manual());
  }
  torch::Tensor loss_of(const fulgur::Batch& b) {
    return torch::nn::functional::cross_entropy(net->forward(b.input) * scale, b.target);
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor loss = loss_of(b);
    log("train_loss", loss);
    if (!o.manual()) return loss;
    auto opt = optimizers().front();
    opt->zero_grad();
    manual_backward(loss);
    if (o.manual_clip() > 0) clip_gradients(*opt, o.manual_clip());
    opt->step();
    return loss;
  }
  void validation_step(const fulgur::Batch& b, int64_t) override { log("val_loss", loss_of(b), {.sync_dist = true}); }
  fulgur::OptimizerConfig configure_optimizers() override {
    if (o.optimizer() == ProbeOptimizer::SGD) {
      return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(o.lr()).momentum(0.9)),
              std::nullopt};
    }
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(o.lr())), std::nullopt};
  }
  void on_fit_end() override {
    torch::optim::Optimizer& optimizer = *trainer()->optimizers().front().optimizer;
    if (!o.state_file().empty()) {
      // "<name> <parameter numel> <optimizer state numel>": the state is
      // Adam's exp_avg or SGD's momentum buffer, as this rank holds it.
      std::ofstream out(o.state_file() + "." + std::to_string(global_rank()));
      for (const auto& item : named_parameters()) {
        const auto found = optimizer.state().find(item.value().unsafeGetTensorImpl());
        int64_t state = -1;
        if (found != optimizer.state().end()) {
          if (o.optimizer() == ProbeOptimizer::Adam) {
            state = static_cast<torch::optim::AdamParamState&>(*found->second).exp_avg().numel();
          } else {
            state = static_cast<torch::optim::SGDParamState&>(*found->second).momentum_buffer().numel();
          }
        }
        out << item.key() << " " << item.value().numel() << " " << state << "\n";
      }
      const auto* fsdp = dynamic_cast<const fulgur::FSDPStrategy*>(&trainer()->strategy());
      if (const fulgur::ShardedReducer* sharded = fsdp ? fsdp->sharded_reducer() : nullptr; sharded != nullptr) {
        auto& parallel = dynamic_cast<fulgur::DataParallelStrategy&>(trainer()->strategy());
        out << "units " << fsdp->shard_layout()->units().size() << "\n";
        out << "largest_unit " << fsdp->shard_layout()->largest_unit_numel() << "\n";
        out << "peak_whole_units " << fsdp->residency()->peak_whole_units() << "\n";
        out << "all_gathers " << parallel.process_group().counts().all_gather << "\n";
        out << "reductions_in_flight " << sharded->peak_reductions_in_flight() << "\n";
      }
      out << "bytes " << fulgur::training_state_bytes(trainer()->strategy(), *this, trainer()->optimizers()) << "\n";
    }
    if (o.output().empty()) return;
    // Every rank takes part: under FULL_SHARD each parameter is all-gathered.
    std::vector<torch::Tensor> flat;
    for (const auto& p : parameters()) flat.push_back(trainer()->strategy().whole_tensor(p, p).cpu().reshape({-1}));
    if (!trainer()->is_global_zero()) return;
    for (const auto& b : buffers()) flat.push_back(b.detach().cpu().to(torch::kFloat32).reshape({-1}));
    const auto bytes = torch::pickle_save(torch::cat(flat));
    std::ofstream(o.output(), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const FSDPProbeModelOptions o;
  torch::nn::Sequential net{nullptr};
  torch::Tensor scale;
};

#define FSDP_PROBE_DATA_OPTIONS(X)                                   \
  X(int64_t, batch_size, 12, "samples per batch", check::AtLeast{1}) \
  X(int64_t, samples, 48, "samples in the dataset", check::AtLeast{1})

struct FSDPProbeDataOptions {
  FULGUR_OPTIONS(FSDPProbeDataOptions, FSDP_PROBE_DATA_OPTIONS)
};

struct FSDPProbeData : fulgur::DataModule {
  using Options = FSDPProbeDataOptions;
  explicit FSDPProbeData(const FSDPProbeDataOptions& o) : batch_size(o.batch_size()), samples(o.samples()) {}
  std::shared_ptr<fulgur::DataLoader> loader() {
    // The same data on every rank and every run, whatever the global seed.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(4321);
    const torch::Tensor x = torch::randn({samples, 8}, gen);
    const torch::Tensor y = torch::randint(0, 5, {samples}, gen);
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<fulgur::TensorDataset>(x, y),
                                                   fulgur::DatasetLoaderOptions(batch_size).seed(0));
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(); }
  int64_t batch_size;
  int64_t samples;
};

}  // namespace

int main(int argc, char** argv) {
  const auto run = [](int n, const char* const* args) { return fulgur::cli::run<FSDPProbeModel, FSDPProbeData>(n, args); };
  if (argc > 1 && std::string(argv[1]) == "runs") return fulgur::testing::run_probe_list(argc, argv, run);
  return run(argc, argv);
}

}  // namespace fsdp_probe
