// A training program for pipeline parallelism's tests: a PipelineModule of
// --model.layers small layers (a Linear and a tanh each; with
// --model.tensor_parallel a residual MLP block that a plan splits over tp)
// regressing a fixed target, the same program in one process and on any
// pp x dp x tp mesh. Each
// rank of the first data-parallel replica writes the final parameters of
// every layer it holds to --model.output.layer<i>, so a test compares them
// layer by layer with one process's (dp by ddp or fsdp).
//
//   pipeline_probe fit --trainer.devices 2 --trainer.strategy model_parallel \
//       --trainer.model_parallel.pipeline_parallel_size 2 --trainer.model_parallel.data_parallel ddp \
//       --model.output params.pt
#include "probe_runs.hpp"

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <csignal>
#include <fstream>
#include <iostream>

// One of the programs in a multi-call binary (started through bin/pipeline_probe).
namespace pipeline_probe {

namespace {

namespace check = fulgur::check;

#define PIPELINE_PROBE_MODEL_OPTIONS(X)                                                               \
  X(std::string, output, "", "where the replica-0 ranks write each layer's final parameters", check::Any{}) \
  X(int64_t, layers, 4, "layers of the model", check::AtLeast{1})                                      \
  X(int64_t, width, 8, "features per layer", check::AtLeast{1})                                        \
  X(double, lr, 0.01, "Adam's learning rate", check::Positive{})                                      \
  X(int64_t, fail_at_step, -1, "the last stage throws at this step (-1: never)", check::Any{})        \
  X(int64_t, signal_step, -1, "the last stage raises SIGUSR1 during this step (-1: never)", check::Any{})   \
  X(bool, tensor_parallel, false, "layers are MLP blocks split over tp (Megatron-style)", check::Any{})

struct ProbeModelOptions {
  FULGUR_OPTIONS(ProbeModelOptions, PIPELINE_PROBE_MODEL_OPTIONS)
};

// One layer: the forward of a module AnyModule can hold takes and returns one tensor.
struct DenseImpl : torch::nn::Module {
  explicit DenseImpl(int64_t width) : linear(register_module("linear", torch::nn::Linear(width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::tanh(linear->forward(x)); }
  torch::nn::Linear linear;
};
TORCH_MODULE(Dense);

// A residual MLP block: up's outputs and down's inputs split over tp.
struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(int64_t width)
      : up(register_module("up", fulgur::ShardableLinear(width, 2 * width))),
        down(register_module("down", fulgur::ShardableLinear(2 * width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + down->forward(torch::tanh(up->forward(x))); }
  fulgur::ShardableLinear up, down;
};
TORCH_MODULE(Block);

struct Stack : fulgur::PipelineModule {
  using Options = ProbeModelOptions;
  explicit Stack(const ProbeModelOptions& options) : PipelineModule(options.layers()), o(options) {}

  torch::nn::AnyModule make_layer(int64_t) override {
    if (o.tensor_parallel()) return torch::nn::AnyModule(Block(o.width()));
    return torch::nn::AnyModule(Dense(o.width()));
  }
  void configure_model(fulgur::DeviceMesh& mesh) override {
    PipelineModule::configure_model(mesh);  // the layers first (on a pipeline: this rank's)
    if (o.tensor_parallel()) {
      fulgur::parallelize_module(*this, mesh,
                                 {{"layers.*.up", fulgur::ColwiseParallel()}, {"layers.*.down", fulgur::RowwiseParallel()}});
    }
  }
  torch::Tensor loss(const torch::Tensor& output, const fulgur::Batch& batch) override {
    if (o.fail_at_step() >= 0 && trainer()->state().global_step() == o.fail_at_step()) {
      throw std::runtime_error("pipeline_probe: the last stage fails on purpose");
    }
    if (o.signal_step() >= 0 && trainer()->state().global_step() == o.signal_step()) std::raise(SIGUSR1);
    return torch::mse_loss(output, batch.target);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(o.lr())), std::nullopt};
  }
  void on_fit_end() override {
    fulgur::Strategy& strategy = trainer()->strategy();
    if (const auto* runner = dynamic_cast<const fulgur::PipelineRunner*>(pipeline())) {
      std::cout << "pipeline_probe rank " << global_rank() << ": peak_in_flight " << runner->peak_in_flight() << std::endl;
    }
    if (o.output().empty()) return;
    for (int64_t i = 0; i < num_layers(); ++i) {
      if (!has_layer(i)) continue;
      std::vector<torch::Tensor> parts;
      // Whole: every rank of a tensor-parallel group (and of the dp group,
      // whose ranks hold fsdp's shards) takes part; the first writes.
      for (const auto& p : layer_parameters(i)) parts.push_back(strategy.whole_tensor(p, p.detach()).cpu().reshape({-1}));
      if (strategy.device_mesh().rank("tp") != 0 || strategy.data_parallel_rank() != 0) continue;
      const auto bytes = torch::pickle_save(torch::cat(parts));
      std::ofstream(o.output() + ".layer" + std::to_string(i), std::ios::binary)
          .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  }

  const ProbeModelOptions o;
};

#define PIPELINE_PROBE_DATA_OPTIONS(X)                                                \
  X(int64_t, batch_size, 8, "samples per batch and replica", check::AtLeast{1})        \
  X(int64_t, samples, 32, "samples in the dataset", check::AtLeast{1})                 \
  X(int64_t, width, 8, "features per sample (the model's width)", check::AtLeast{1})

struct ProbeDataOptions {
  FULGUR_OPTIONS(ProbeDataOptions, PIPELINE_PROBE_DATA_OPTIONS)
};

struct ProbeData : fulgur::DataModule {
  using Options = ProbeDataOptions;
  explicit ProbeData(const ProbeDataOptions& o) : o(o) {}
  std::shared_ptr<fulgur::DataLoader> loader() {
    // The same samples on every rank and run.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
    const torch::Tensor x = torch::randn({o.samples(), o.width()}, gen);
    const torch::Tensor y = torch::sin(x.roll(1, 1)) * 0.5;
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<fulgur::TensorDataset>(x, y),
                                                   fulgur::DatasetLoaderOptions(o.batch_size()).seed(0));
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(); }
  const ProbeDataOptions o;
};

}  // namespace

int main(int argc, char** argv) {
  const auto run = [](int n, const char* const* args) { return fulgur::cli::run<Stack, ProbeData>(n, args); };
  if (argc > 1 && std::string(argv[1]) == "runs") return fulgur::testing::run_probe_list(argc, argv, run);
  return run(argc, argv);
}

}  // namespace pipeline_probe
