// Training throughput on one GPU, samples/s after a warm-up. ResNet-50
// (batch 256, channels_last, bf16-mixed, 16-mixed or 32-true), images/s:
//   --case trainer  fulgur's Trainer on in-memory batches (pinned host memory);
//   --case bare     a bare LibTorch loop on the same batches: copy, autocast
//                   forward, backward, SGD step, nothing else;
//   --case jpeg     fulgur's Trainer reading JPEGs from --data through its
//                   ImageNet training pipeline with --workers loader threads,
//                   decoded on the CPU (--decode cpu, the default) or on the
//                   GPU (--decode gpu: nvImageCodec, docs/data.md).
// --arch resnet18 trains ResNet-18 instead of ResNet-50 (trainer, bare, jpeg).
// A small model, where launching kernels costs more than running them:
//   --case mlp      fulgur's Trainer on an MLP (--depth Linear+ReLU layers of
//                   --width units, 256 inputs, 10 classes; batch 64 unless
//                   --batch_size says otherwise), samples/s.
// --cuda_graph (trainer, jpeg, mlp) sets the Trainer's cuda_graph option: the
// training step is captured once as a CUDA graph and replayed.
//   The jpeg loader is the shipped ImageNet one's: persistent workers (the
//   next epoch's first batches start behind this epoch's last ones) and
//   pin_memory on (only CPU tensors are pinned; GPU-decoded batches pass).
// --case parity   GPU decode against the CPU decode of the same crops
//                 (--images of --data, the training recipe): the mean and
//                 largest difference in pixel values, and which engine decoded
//                 them; exit 1 beyond the tolerance. --device cpu rehearses it
//                 without a GPU (nvImageCodec's CPU backend on both sides).
// --case probe prints whether fulgur sees a GPU and does nothing else.
// bench/gpu_throughput/run.sh runs these and the Python peers (a plain
// PyTorch loop, PyTorch Lightning, torchvision's DataLoader) and prints the
// ratios. Without a visible GPU it prints one line saying so and exits 0.
//
//   build/bin/gpu_throughput --case trainer|bare|jpeg|mlp|probe [--precision bf16-mixed|16-mixed|32-true]
//                            [--arch resnet50|resnet18] [--cuda_graph] [--batch_size 256] [--steps 50]
//                            [--warmup 10] [--data DIR] [--workers N] [--decode cpu|gpu] [--width 1024] [--depth 4]
//   build/bin/gpu_throughput --case parity --data DIR [--images 256] [--device cuda|cpu]
#include "bench_support.hpp"
#include "mlp_module.hpp"

#include <fulgur/datamodules/datasets/imagenet_pipelines.hpp>
#include <fulgur/datamodules/images/codecs/nvimgcodec_decoder.hpp>
#include <fulgur/datamodules/images/device_decode_dataset.hpp>
#include <fulgur/datamodules/images/device_image_recipe.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>
#include <fulgur/fulgur.hpp>
#include <fulgur/modules/models/create_model.hpp>
#include <fulgur/strategies/cuda/cuda_runtime.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

// One of the programs in a multi-call binary (started through bin/gpu_throughput).
namespace gpu_throughput {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;

/// Whether `name` is on the command line (a flag without a value).
bool has_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

torch::nn::AnyModule resnet(const std::string& arch) {
  return fulgur::models::create_model(arch, 1000, 3, {.channels_last = true});
}

std::vector<fulgur::Batch> make_batches(int64_t count, int64_t batch_size) {
  std::vector<fulgur::Batch> batches;
  for (int64_t i = 0; i < count; ++i) {
    batches.push_back(fulgur::Batch{torch::randn({batch_size, 3, 224, 224}), torch::randint(0, 1000, {batch_size})}
                          .pin_memory());
  }
  return batches;
}

torch::Tensor to_channels_last(const torch::Tensor& input) {
  return input.contiguous(torch::MemoryFormat::ChannelsLast);
}

struct ResNetModule : fulgur::LightningModule {
  explicit ResNetModule(const std::string& arch) {
    model = resnet(arch);
    register_module("model", model.ptr());
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(to_channels_last(b.input)), b.target);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)),
            std::nullopt};
  }
  torch::nn::AnyModule model;
};

constexpr int64_t kMlpInputs = 256;
constexpr int64_t kMlpClasses = 10;

/// depth x (Linear + ReLU) and a Linear head: a step of a few dozen small
/// kernels, so the time to launch them is most of the step.
torch::nn::Sequential make_mlp(int64_t width, int64_t depth) {
  torch::nn::Sequential layers;
  int64_t inputs = kMlpInputs;
  for (int64_t i = 0; i < depth; ++i) {
    layers->push_back(torch::nn::Linear(inputs, width));
    layers->push_back(torch::nn::ReLU());
    inputs = width;
  }
  layers->push_back(torch::nn::Linear(inputs, kMlpClasses));
  return layers;
}

std::vector<fulgur::Batch> make_mlp_batches(int64_t count, int64_t batch_size) {
  std::vector<fulgur::Batch> batches;
  for (int64_t i = 0; i < count; ++i) {
    batches.push_back(
        fulgur::Batch{torch::randn({batch_size, kMlpInputs}), torch::randint(0, kMlpClasses, {batch_size})}.pin_memory());
  }
  return batches;
}

struct LoaderData : fulgur::DataModule {
  explicit LoaderData(std::shared_ptr<fulgur::DataLoader> l) : loader(std::move(l)) {}
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader; }
  std::shared_ptr<fulgur::DataLoader> loader;
};

/// Starts the clock after `warmup` steps (synchronising the GPU first) and
/// stops it after the last, so only steady-state steps are timed.
struct StepClock : fulgur::Callback {
  explicit StepClock(int64_t warmup) : warmup(warmup) {}
  std::string state_key() const override { return "StepClock"; }
  void on_train_batch_end(fulgur::Trainer& trainer, fulgur::LightningModule&, const torch::Tensor&,
                          const fulgur::Batch& batch, int64_t) override {
    if (trainer.state().global_step() == warmup) {
      torch::cuda::synchronize();
      start = Clock::now();
    } else if (trainer.state().global_step() > warmup) {
      images += batch.size();
    }
  }
  void on_train_end(fulgur::Trainer&, fulgur::LightningModule&) override {
    torch::cuda::synchronize();
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  int64_t warmup;
  Clock::time_point start;
  int64_t images = 0;
  double seconds = 0.0;
};

double run_trainer(fulgur::LightningModule& module, std::shared_ptr<fulgur::DataLoader> loader,
                   fulgur::PrecisionMode precision, int64_t steps, int64_t warmup, bool cuda_graph) {
  LoaderData data(std::move(loader));
  auto clock = std::make_shared<StepClock>(warmup);
  fulgur::Trainer trainer(fulgur::TrainerOptions()
                              .accelerator(fulgur::AcceleratorKind::Cuda)
                              .devices("1")
                              .precision(precision)
                              .max_steps(warmup + steps)
                              .logger(false)
                              .enable_checkpointing(false)
                              .enable_progress_bar(false)
                              .enable_model_summary(false)
                              .num_sanity_val_steps(0)
                              .cuda_graph(cuda_graph),
                          {clock});
  trainer.fit(module, data);
  return static_cast<double>(clock->images) / clock->seconds;
}

double run_bare(const std::string& arch, const std::vector<fulgur::Batch>& batches, fulgur::PrecisionMode precision,
                int64_t steps, int64_t warmup) {
  const torch::Device device(torch::kCUDA, 0);
  torch::nn::AnyModule model = resnet(arch);
  model.ptr()->to(device);
  model.ptr()->train();
  torch::optim::SGD optimizer(model.ptr()->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  // Autocast and (16-mixed) the dynamic loss scaler, as the Trainer uses them.
  fulgur::Precision amp(precision, device);
  Clock::time_point start;
  int64_t images = 0;
  for (int64_t step = 0; step < warmup + steps; ++step) {
    if (step == warmup) {
      torch::cuda::synchronize();
      start = Clock::now();
    }
    const fulgur::Batch b = batches[static_cast<size_t>(step) % batches.size()].to(device, /*non_blocking=*/true);
    torch::Tensor loss;
    {
      fulgur::Precision::AutocastScope autocast(amp);
      loss = torch::nn::functional::cross_entropy(model.forward(to_channels_last(b.input)), b.target);
    }
    amp.backward(loss);
    amp.optimizer_step(optimizer);
    optimizer.zero_grad();
    if (step >= warmup) images += b.size();
  }
  torch::cuda::synchronize();
  return static_cast<double>(images) / std::chrono::duration<double>(Clock::now() - start).count();
}

// Pixel values (0-255) of normalized [N, 3, H, W] batches' difference.
std::pair<double, double> pixel_difference(const torch::Tensor& a, const torch::Tensor& b) {
  const auto std = torch::tensor(fulgur::kImageNetStd, torch::kFloat64).view({1, 3, 1, 1});
  const torch::Tensor d = ((a.to(torch::kCPU, torch::kFloat64) - b.to(torch::kCPU, torch::kFloat64)) * std * 255.0).abs();
  return {d.mean().item<double>(), d.max().item<double>()};
}

// Same crops, same resize (LibTorch's, in float), two decoders: the
// device's (hardware engine / nvJPEG) and nvImageCodec's libjpeg-turbo.
// The tolerance is the decoders' rounding (IDCT, chroma upsampling) after
// the resize has averaged it: a first bound, to be confirmed on the GPU.
int run_parity(const std::string& root, int64_t count, const torch::Device& device) {
  constexpr double kMeanTolerance = 1.5;
  constexpr double kMaxTolerance = 48.0;
  auto images = std::make_shared<const fulgur::ImageFileList>(fulgur::ImageFileList::from_class_folders(root));
  count = std::min(count, images->size());
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) indices[static_cast<size_t>(i)] = i * images->size() / count;
  const auto recipe = fulgur::DeviceImageRecipe::train(224, fulgur::kImageNetMean, fulgur::kImageNetStd);
  using Backend = fulgur::NvImageCodecDecoder::Backend;
  const fulgur::DeviceDecodeDataset on_device(
      images, recipe,
      std::make_shared<fulgur::NvImageCodecDecoder>(device.is_cuda() ? Backend::Gpu : Backend::Cpu,
                                                    device.is_cuda() ? device.index() : 0, 0, static_cast<int>(count)),
      device, 1234);
  const fulgur::DeviceDecodeDataset on_cpu(images, recipe, std::make_shared<fulgur::NvImageCodecDecoder>(Backend::Cpu),
                                           torch::Device(torch::kCPU), 1234);
  const auto got = on_device.decode_batch(indices);
  const auto want = on_cpu.decode_batch(indices);
  const auto [mean, max] = pixel_difference(got.batch.input, want.batch.input);
  const bool within = mean <= kMeanTolerance && max <= kMaxTolerance;
  std::cout << fmt::format("gpu_throughput[parity, {}]: {} images, |{} decode - cpu decode| mean {:.3f} max {:.0f} "
                           "pixel values (tolerance mean <= {}, max <= {}): {}; engines {}",
                           device.str(), count, device.str(), mean, max, kMeanTolerance, kMaxTolerance,
                           within ? "within" : "BEYOND", got.counts.to_string())
            << std::endl;
  return within ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string device_flag = flag(argc, argv, "--device", std::string("cuda"));
  if (device_flag == "cpu" && flag(argc, argv, "--case", std::string()) == "parity") {
    // The rehearsal without a GPU: the same code, nvImageCodec's CPU backend.
    return run_parity(flag(argc, argv, "--data", std::string()), flag(argc, argv, "--images", 256),
                      torch::Device(torch::kCPU));
  }
  if (!fulgur::CudaRuntime::load() || !torch::cuda::is_available()) {
    std::cout << "gpu_throughput: skipped, no GPU visible (" << fulgur::CudaRuntime::status() << ")" << std::endl;
    return 0;
  }
  const std::string which = flag(argc, argv, "--case", std::string("trainer"));
  if (which == "probe") {
    std::cout << "gpu_throughput: " << torch::cuda::device_count() << " GPU(s) visible (" << fulgur::CudaRuntime::status()
              << ")" << std::endl;
    return 0;
  }
  // A clear error naming the flag, before any work.
  fulgur::PrecisionMode precision;
  try {
    precision = fulgur::parse_choice<fulgur::PrecisionMode>(flag(argc, argv, "--precision", std::string("bf16-mixed")));
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: --precision: " << e.what() << "\n";
    return 2;
  }
  const int64_t batch_size = flag(argc, argv, "--batch_size", which == "mlp" ? 64 : 256);
  const int64_t steps = flag(argc, argv, "--steps", 50);
  const int64_t warmup = flag(argc, argv, "--warmup", 10);
  const bool cuda_graph = has_flag(argc, argv, "--cuda_graph");
  const std::string arch = flag(argc, argv, "--arch", std::string("resnet50"));
  if (arch != "resnet50" && arch != "resnet18") {
    std::cerr << "error: --arch: expected resnet50 or resnet18, got '" << arch << "'\n";
    return 2;
  }
  fulgur::DecodeMode decode = fulgur::DecodeMode::Cpu;
  try {
    decode = fulgur::parse_choice<fulgur::DecodeMode>(flag(argc, argv, "--decode", std::string("cpu")));
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: --decode: " << e.what() << "\n";
    return 2;
  }
  torch::manual_seed(0);
  if (which == "parity") {
    const std::string root = flag(argc, argv, "--data", std::string());
    if (root.empty()) throw std::invalid_argument("--case parity needs --data DIR (one folder per class)");
    return run_parity(root, flag(argc, argv, "--images", 256), torch::Device(torch::kCUDA, 0));
  }
  double rate = 0.0;
  if (which == "trainer" || which == "bare") {
    if (which == "bare" && cuda_graph) throw std::invalid_argument("--cuda_graph: a Trainer option (trainer, jpeg, mlp)");
    const auto batches = make_batches(8, batch_size);
    if (which == "trainer") {
      ResNetModule module(arch);
      rate = run_trainer(module, std::make_shared<fulgur::TensorBatchLoader>(batches), precision, steps, warmup,
                         cuda_graph);
    } else {
      rate = run_bare(arch, batches, precision, steps, warmup);
    }
  } else if (which == "mlp") {
    fulgur::bench::MlpModule module(make_mlp(flag(argc, argv, "--width", 1024), flag(argc, argv, "--depth", 4)));
    rate = run_trainer(module, std::make_shared<fulgur::TensorBatchLoader>(make_mlp_batches(64, batch_size)),
                       precision, steps, warmup, cuda_graph);
  } else if (which == "jpeg") {
    const std::string root = flag(argc, argv, "--data", std::string());
    if (root.empty()) throw std::invalid_argument("--case jpeg needs --data DIR (one folder per class)");
    const int64_t workers =
        flag(argc, argv, "--workers", static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency())));
    auto images = std::make_shared<const fulgur::ImageFileList>(fulgur::ImageFileList::from_class_folders(root));
    // decode gpu: the Trainer's set_device makes it a DeviceDecodeDataset.
    fulgur::DeviceDecode on_device;
    if (decode != fulgur::DecodeMode::Cpu) {
      on_device = {decode, fulgur::DeviceImageRecipe::train(224, fulgur::kImageNetMean, fulgur::kImageNetStd),
                   batch_size, ""};
    }
    auto dataset =
        std::make_shared<const fulgur::ImageDataset>(images, fulgur::imagenet_train_pipeline(), 1234, 0, on_device);
    auto loader = std::make_shared<fulgur::DatasetLoader>(
        dataset,
        fulgur::DatasetLoaderOptions(batch_size)
            .shuffle(true)
            .drop_last(true)
            .num_workers(workers)
            .persistent_workers(true)
            .pin_memory(true));
    ResNetModule module(arch);
    rate = run_trainer(module, loader, precision, steps, warmup, cuda_graph);
  } else {
    std::cerr << "error: --case: expected trainer, bare, jpeg, parity, mlp or probe, got '" << which << "'\n";
    return 2;
  }
  const std::string variant = (arch == "resnet50" ? "" : ", " + arch) +
                              (which == "jpeg" ? ", decode " + fulgur::to_string(decode) : "");
  std::cout << fmt::format("gpu_throughput[{}{}{}, {}]: {:.1f} {}/s", which, variant, cuda_graph ? ", cuda_graph" : "",
                           fulgur::to_string(precision),
                           rate, which == "mlp" ? "samples" : "img")
            << std::endl;
  return 0;
}

}  // namespace gpu_throughput
