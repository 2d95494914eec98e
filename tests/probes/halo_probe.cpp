// A training program for spatial parallelism's tests: a small convolutional
// network with a dense target (a value per pixel), whose images are split
// into bands of rows over the mesh's cp ranks (halo_conv2d exchanges the
// rows each convolution needs beyond its band), so the same program trains
// on one process and on any cp x dp mesh. Rank 0 writes the final
// parameters to --model.output, every rank its own copy to
// --model.output.rank<r>.
//
//   halo_probe fit --trainer.devices 2 --trainer.strategy model_parallel \
//       --trainer.model_parallel.context_parallel_size 2 --model.output params.pt
//   halo_probe runs 2 FILE   (FILE's command lines in one launch of 2 ranks, probe_runs.hpp)
#include "probe_runs.hpp"

#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <fstream>

// One of the programs in a multi-call binary (started through bin/halo_probe).
namespace halo_probe {

namespace {

namespace check = fulgur::check;

#define HALO_PROBE_MODEL_OPTIONS(X)                                                   \
  X(std::string, output, "", "rank 0 writes the final parameters there", check::Any{}) \
  X(double, lr, 0.01, "Adam's learning rate", check::Positive{})

struct ProbeModelOptions {
  FULGUR_OPTIONS(ProbeModelOptions, HALO_PROBE_MODEL_OPTIONS)
};

struct DenseNet : fulgur::LightningModule {
  using Options = ProbeModelOptions;
  explicit DenseNet(const ProbeModelOptions& options) : o(options) {
    using torch::nn::Conv2dOptions;
    conv1 = register_module("conv1", torch::nn::Conv2d(Conv2dOptions(2, 4, 3).padding(1)));
    // Halo 4: a dilated 5x5 kernel reaches 4 rows beyond the band.
    conv2 = register_module("conv2", torch::nn::Conv2d(Conv2dOptions(4, 4, 5).padding(4).dilation(2)));
    conv3 = register_module("conv3", torch::nn::Conv2d(Conv2dOptions(4, 1, 3).padding(1)));
  }

  void configure_model(fulgur::DeviceMesh& mesh) override { cp = mesh.spans("cp") ? mesh.share_group("cp") : nullptr; }

  torch::Tensor loss_of(const fulgur::Batch& b) {
    torch::Tensor x = b.input, target = b.target;
    if (cp) {  // this rank's band of rows of every image and target
      x = x.chunk(cp->size(), 2)[cp->rank()];
      target = target.chunk(cp->size(), 2)[cp->rank()];
    }
    x = torch::tanh(fulgur::halo_conv2d(x, *conv1, cp.get()));
    x = torch::tanh(fulgur::halo_conv2d(x, *conv2, cp.get()));
    return torch::mse_loss(fulgur::halo_conv2d(x, *conv3, cp.get()), target);
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor loss = loss_of(b);
    log("train_loss", loss);
    return loss;
  }
  void validation_step(const fulgur::Batch& b, int64_t) override { log("val_loss", loss_of(b), {.sync_dist = true}); }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(o.lr())), std::nullopt};
  }
  void on_fit_end() override {
    if (o.output().empty()) return;
    fulgur::Strategy& strategy = trainer()->strategy();
    std::vector<torch::Tensor> whole;
    for (const auto& p : parameters()) whole.push_back(strategy.whole_tensor(p, p).cpu().reshape({-1}));
    auto write = [&](const std::string& path) {
      const auto bytes = torch::pickle_save(torch::cat(whole));
      std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    write(o.output() + ".rank" + std::to_string(global_rank()));
    if (trainer()->is_global_zero()) write(o.output());
  }

  const ProbeModelOptions o;
  std::shared_ptr<fulgur::ProcessGroup> cp;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
};

#define HALO_PROBE_DATA_OPTIONS(X)                                                     \
  X(int64_t, batch_size, 8, "images per batch and process", check::AtLeast{1})         \
  X(int64_t, samples, 32, "images in the dataset", check::AtLeast{1})                  \
  X(int64_t, size, 16, "height and width of the images", check::AtLeast{1})

struct ProbeDataOptions {
  FULGUR_OPTIONS(ProbeDataOptions, HALO_PROBE_DATA_OPTIONS)
};

struct ProbeData : fulgur::DataModule {
  using Options = ProbeDataOptions;
  explicit ProbeData(const ProbeDataOptions& o) : o(o) {}
  std::shared_ptr<fulgur::DataLoader> loader() {
    // The same images on every rank and run; the target is a fixed 5x5
    // filter of them, so each pixel's value depends on its neighbours.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
    const torch::Tensor x = torch::randn({o.samples(), 2, o.size(), o.size()}, gen);
    const torch::Tensor filter = torch::randn({1, 2, 5, 5}, gen) / 5.0;
    const torch::Tensor y = torch::tanh(torch::conv2d(x, filter, {}, 1, 2));
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<fulgur::TensorDataset>(x, y),
                                                   fulgur::DatasetLoaderOptions(o.batch_size()).seed(0));
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(); }
  const ProbeDataOptions o;
};

}  // namespace

int main(int argc, char** argv) {
  const auto run = [](int n, const char* const* args) { return fulgur::cli::run<DenseNet, ProbeData>(n, args); };
  if (argc > 1 && std::string(argv[1]) == "runs") return fulgur::testing::run_probe_list(argc, argv, run);
  return run(argc, argv);
}

}  // namespace halo_probe
