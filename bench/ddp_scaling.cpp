// One rank of the DDP scaling benchmark: a compute-bound MLP on synthetic
// data, one intra-op thread per process, a fixed per-process batch. Rank 0
// appends "<world_size> <samples/s> <allreduce wait s/step> <s/step>" for
// each timed epoch to --model.report. scripts/bench.sh runs it with 1 and 2
// processes and prints the ratio; bench/cluster_scaling.sh runs it on a
// simulated cluster (--model.width 2048: 37.8 MB of gradients).
#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/fulgur.hpp>

#include <chrono>
#include <fstream>

// One of the programs in a multi-call binary (started through bin/ddp_scaling).
namespace ddp_scaling {

namespace {

using Clock = std::chrono::steady_clock;

#define DDP_SCALING_MODEL_OPTIONS(X)                                                              \
  X(std::string, report, "", "file rank 0 appends its timings to", fulgur::check::Any{})          \
  X(int64_t, width, 1024, "hidden width of the MLP", fulgur::check::AtLeast{1})
struct ScalingModelOptions {
  FULGUR_OPTIONS(ScalingModelOptions, DDP_SCALING_MODEL_OPTIONS)
};

#define DDP_SCALING_DATA_OPTIONS(X)                                                    \
  X(int64_t, batch_size, 64, "examples per batch", fulgur::check::AtLeast{1})          \
  X(int64_t, batches, 30, "batches per epoch (each rank's own)", fulgur::check::AtLeast{1})
struct ScalingDataOptions {
  FULGUR_OPTIONS(ScalingDataOptions, DDP_SCALING_DATA_OPTIONS)
};

struct ScalingModel : fulgur::LightningModule {
  using Options = ScalingModelOptions;
  explicit ScalingModel(const Options& o) : report(o.report()) {
    const int64_t width = o.width();
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(512, width), torch::nn::ReLU(),
                                                       torch::nn::Linear(width, width), torch::nn::ReLU(),
                                                       torch::nn::Linear(width, width), torch::nn::ReLU(),
                                                       torch::nn::Linear(width, 10)));
    torch::set_num_threads(1);
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    samples += b.size();
    return torch::nn::functional::cross_entropy(net->forward(b.input), b.target);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.01)), std::nullopt};
  }
  void on_train_epoch_start() override {
    trainer()->strategy().barrier("epoch start");
    samples = 0;
    start = Clock::now();
    if (const auto* reducer = ddp_reducer()) wait_at_start = reducer->total_wait_seconds();
  }
  void on_train_epoch_end() override {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // The first epoch warms up allocators and connections; it is not reported.
    if (trainer()->state().current_epoch() == 0 || report.empty() || !trainer()->is_global_zero()) return;
    const int64_t world = world_size();
    const auto* reducer = ddp_reducer();
    const double waited = reducer ? reducer->total_wait_seconds() - wait_at_start : 0.0;
    // samples/s over all ranks, the seconds per step spent waiting for allreduce after backward, seconds per step.
    const auto steps = static_cast<double>(trainer()->state().num_training_batches());
    std::ofstream(report, std::ios::app) << world << ' ' << static_cast<double>(samples * world) / seconds << ' '
                                         << waited / steps << ' ' << seconds / steps << '\n';
  }
  const fulgur::GradientReducer* ddp_reducer() {
    const auto* ddp = dynamic_cast<const fulgur::DDPStrategy*>(&trainer()->strategy());
    return ddp ? ddp->reducer() : nullptr;
  }
  torch::nn::Sequential net{nullptr};
  std::string report;
  int64_t samples = 0;
  double wait_at_start = 0.0;
  Clock::time_point start;
};

struct ScalingData : fulgur::DataModule {
  using Options = ScalingDataOptions;
  explicit ScalingData(const Options& o) : batch_size(o.batch_size()), batches(o.batches()) {}
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    std::vector<fulgur::Batch> data;
    for (int64_t i = 0; i < batches; ++i) {
      data.push_back({torch::randn({batch_size, 512}), torch::randint(0, 10, {batch_size})});
    }
    return std::make_shared<fulgur::TensorBatchLoader>(std::move(data));
  }
  int64_t batch_size;
  int64_t batches;
};

}  // namespace

int main(int argc, char** argv) { return fulgur::cli::run<ScalingModel, ScalingData>(argc, argv); }

}  // namespace ddp_scaling
