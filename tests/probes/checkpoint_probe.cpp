// A program for the checkpoint tests, which need fresh processes.
//
//   checkpoint_probe save-loop DIR
//       saves checkpoints to DIR/last.ckpt forever ({"counter": i, "values":
//       a tensor filled with i}); the test kills it at random moments.
//   checkpoint_probe async-save-loop DIR
//       the same through AsyncCheckpointIO, overwriting the saved tensor as
//       soon as save() returns (the file must still hold the copy).
//   checkpoint_probe write-sample PATH
//       writes one small checkpoint (the fuzzer's seed).
//   checkpoint_probe fit|validate --model.output params.pt --model.save_at_step K ... (the CLI)
//       trains a small model with dropout, SGD momentum and an epoch LR
//       scheduler on shuffled data read by DatasetLoader workers; writes the
//       final parameters to --model.output; with --model.save_at_step K it
//       also calls trainer.save_checkpoint(<run folder>/checkpoints/step=K.ckpt)
//       from on_train_batch_end at step K.
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/fulgur.hpp>
#include <fulgur/engine/checkpoint/async_checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <iostream>
#include <string>

// One of the programs in a multi-call binary (started through bin/checkpoint_probe).
namespace checkpoint_probe {

namespace {

namespace check = fulgur::check;

#define CHECKPOINT_PROBE_MODEL_OPTIONS(X)                                            \
  X(std::string, output, "", "the final parameters are written there", check::Any{}) \
  X(int64_t, save_at_step, -1, "save <run folder>/checkpoints/step=K.ckpt at that step", check::Any{})

struct ProbeModelOptions {
  FULGUR_OPTIONS(ProbeModelOptions, CHECKPOINT_PROBE_MODEL_OPTIONS)
};

struct ProbeModel : fulgur::LightningModule {
  using Options = ProbeModelOptions;
  explicit ProbeModel(const ProbeModelOptions& o) : output(o.output()), save_at_step(o.save_at_step()) {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::ReLU(),
                                                       torch::nn::Dropout(0.3), torch::nn::Linear(16, 3)));
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const auto loss = torch::nn::functional::cross_entropy(net->forward(b.input), b.target);
    log("train_loss", loss, fulgur::LogOptions{.on_step = true, .on_epoch = true});
    return loss;
  }
  void validation_step(const fulgur::Batch& b, int64_t) override {
    log("val_loss", torch::nn::functional::cross_entropy(net->forward(b.input), b.target));
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    auto sgd = std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    return {sgd, fulgur::LRSchedulerConfig{std::make_shared<torch::optim::StepLR>(*sgd, 1, 0.7),
                                           fulgur::Interval::Epoch, 1}};
  }
  void on_train_batch_end(const torch::Tensor&, const fulgur::Batch&, int64_t) override {
    if (trainer()->state().global_step() == save_at_step) {
      trainer()->save_checkpoint(trainer()->log_dir() / "checkpoints" / fmt::format("step={}.ckpt", save_at_step));
    }
  }
  void on_fit_end() override {
    if (output.empty()) return;
    std::vector<torch::Tensor> params;
    for (const auto& p : parameters()) params.push_back(p.detach().clone());
    torch::save(params, output);
  }
  std::string output;
  int64_t save_at_step;
  torch::nn::Sequential net{nullptr};
};

#define CHECKPOINT_PROBE_DATA_OPTIONS(X)                                                \
  X(int64_t, num_workers, 0, "loader threads of the training split", check::AtLeast{0}) \
  X(int64_t, examples, 80, "examples in the dataset", check::AtLeast{1})

struct ProbeDataOptions {
  FULGUR_OPTIONS(ProbeDataOptions, CHECKPOINT_PROBE_DATA_OPTIONS)
};

struct ProbeData : fulgur::DataModule {
  using Options = ProbeDataOptions;
  explicit ProbeData(const ProbeDataOptions& o) : workers(o.num_workers()), examples(o.examples()) {}
  void setup(fulgur::Stage) override {
    // Fixed data whatever the seed: the seed only drives shuffling, init and dropout.
    auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
    const torch::Tensor x = torch::randn({examples, 6}, generator);
    const torch::Tensor y = torch::randint(0, 3, {examples}, generator, torch::kLong);
    dataset = std::make_shared<fulgur::TensorDataset>(x, y);
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(
        dataset, fulgur::DatasetLoaderOptions(8).shuffle(true).num_workers(workers));
  }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(dataset, fulgur::DatasetLoaderOptions(16));
  }
  int64_t workers;
  int64_t examples;
  std::shared_ptr<fulgur::TensorDataset> dataset;
};

int save_loop(const std::filesystem::path& dir) {
  for (int64_t i = 0;; ++i) {
    fulgur::Checkpoint c = fulgur::new_state_dict();
    c.insert(fulgur::CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
    c.insert("counter", i);
    c.insert("values", torch::full({256 * 1024}, static_cast<float>(i)));
    fulgur::CheckpointIO::save(c, dir / "last.ckpt");
    std::cout << "saved " << i << std::endl;
  }
}

int async_save_loop(const std::filesystem::path& dir) {
  fulgur::AsyncCheckpointIO writer;
  torch::Tensor values = torch::empty({256 * 1024});
  for (int64_t i = 0;; ++i) {
    values.fill_(static_cast<float>(i));
    fulgur::Checkpoint c = fulgur::new_state_dict();
    c.insert(fulgur::CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
    c.insert("counter", i);
    c.insert("values", values);
    writer.save(c, dir / "last.ckpt");
    values.fill_(-1.0F);  // the next step changes the weights while the write runs
    std::cout << "queued " << i << std::endl;
  }
}

}  // namespace

/// A small, complete checkpoint: the fuzzer's seed.
int write_sample(const std::filesystem::path& path) {
  fulgur::Checkpoint c = fulgur::new_state_dict();
  c.insert(fulgur::CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
  c.insert("global_step", int64_t{3});
  auto weights = fulgur::new_state_dict();
  weights.insert("net.0.weight", torch::arange(12, torch::kFloat32).reshape({3, 4}));
  weights.insert("net.0.bias", torch::zeros({3}));
  c.insert("state_dict", weights);
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(0.5);
  list.push_back(std::string("text"));
  c.insert("list", list);
  fulgur::CheckpointIO::save(c, path);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "save-loop") return save_loop(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "async-save-loop") return async_save_loop(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "write-sample") return write_sample(argv[2]);
  return fulgur::cli::run<ProbeModel, ProbeData>(argc, argv);
}

}  // namespace checkpoint_probe
