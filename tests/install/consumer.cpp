// Trains a linear model for a few steps through the installed fulgur: its own
// Dataset with float targets, read by DatasetLoader worker threads. After
// training, `consumer infer CHECKPOINT` predicts from a checkpoint without a
// Trainer (one program, so the install test compiles LibTorch's headers once).
#include "line_data.hpp"
#include "line_model.hpp"

#include <fmt/format.h>

#include <iomanip>
#include <iostream>

// Saves the model at the end of training, while fsdp still shards it.
struct SaveAtEnd : fulgur::Callback {
  explicit SaveAtEnd(std::string path) : path(std::move(path)) {}
  std::string state_key() const override { return "SaveAtEnd"; }
  void on_train_end(fulgur::Trainer& trainer, fulgur::LightningModule&) override { trainer.save_checkpoint(path); }
  std::string path;
};

// The same layers, unwrapped: its weights are "fc.weight", the checkpoint's "fc.module.weight".
struct PlainLine : torch::nn::Module {
  PlainLine() {
    fc = register_module("fc", torch::nn::Linear(1, 8));
    out = register_module("out", torch::nn::Linear(8, 1));
  }
  torch::nn::Linear fc{nullptr}, out{nullptr};
};

// `consumer infer CHECKPOINT`: rebuilds the model from a checkpoint (full or
// sharded) and predicts; loads the same weights into a model without the
// ShardedUnit wrapper; shows what a weights-file reader says about a checkpoint.
int infer(const char* path) {
  try {
    const auto model = fulgur::load_from_checkpoint<Line>(path);
    torch::NoGradGuard no_grad;
    const double y = model->forward(torch::tensor({{0.5f}})).item<double>();
    PlainLine plain;
    fulgur::load_checkpoint_weights(plain, path);
    const double plain_y = plain.out->forward(plain.fc->forward(torch::tensor({{0.5f}}))).item<double>();
    std::cout << "lr=" << model->lr << std::fixed << std::setprecision(1) << " y(0.5)=" << y
              << " plain y(0.5)=" << plain_y << std::endl;
    try {
      fulgur::read_state_dict(path);
    } catch (const std::invalid_argument& e) {
      std::cout << e.what() << std::endl;
    }
    return std::abs(y - 2.5) < 0.05 && y == plain_y ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "infer: " << e.what() << std::endl;
    return 1;
  }
}

// `consumer [STRATEGY DEVICES [CHECKPOINT]]`: the Trainer starts the other
// ranks itself; with CHECKPOINT the trained model is saved there (under
// fsdp as a sharded checkpoint: one file per rank).
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "infer") return infer(argv[2]);
  // `consumer version`: the installed <fulgur/version.hpp> and the CMake
  // package (fulgur_VERSION) must name the same version.
  if (argc == 2 && std::string(argv[1]) == "version") {
    // fmt's compiled half comes from the installed library (the wheel's fmt has headers only).
    std::cout << fmt::format("header {} package {}", fulgur::kVersion, CONSUMER_PACKAGE_VERSION) << std::endl;
    return fulgur::kVersion == CONSUMER_PACKAGE_VERSION ? 0 : 1;
  }
  Line model(LineOptions().lr(0.1));
  Points data;
  const auto strategy = fulgur::parse_choice<fulgur::StrategyKind>(argc > 2 ? argv[1] : "auto");
  const int64_t devices = argc > 2 ? std::stoll(argv[2]) : 1;
  fulgur::TrainerOptions options;
  if (strategy == fulgur::StrategyKind::FSDP) options.fsdp(fulgur::FSDPOptions().state_dict_type(fulgur::StateDictType::Sharded));
  std::vector<std::shared_ptr<fulgur::Callback>> callbacks;
  if (argc > 3) callbacks.push_back(std::make_shared<SaveAtEnd>(argv[3]));
  fulgur::Trainer trainer(options
                              .max_steps(200)
                              .accelerator(fulgur::AcceleratorKind::Cpu)
                              .devices(devices)
                              .strategy(strategy)
                              .logger(false)
                              .enable_checkpointing(false)
                              .enable_progress_bar(false),
                          callbacks);
  trainer.fit(model, data);
  torch::NoGradGuard no_grad;
  const double y = model.forward(torch::tensor({{0.5f}})).item<double>();
  std::cout << "rank=" << trainer.global_rank() << " world=" << trainer.world_size()
            << " steps=" << trainer.state().global_step() << " y(0.5)=" << y << std::endl;
  if (trainer.world_size() != devices) return 1;
  return std::abs(y - 2.5) < 0.05 ? 0 : 1;
}
