// Trains a linear model for a few steps through the installed fulgur: its own
// Dataset with float targets, read by DatasetLoader worker threads.
#include "line_model.hpp"

#include <iostream>

// y = 3x + 1 at 16 points of [-1, 1]; the target is a float tensor [1].
struct LinePoints : fulgur::Dataset {
  int64_t size() const override { return 16; }
  fulgur::Example get(int64_t i) const override {
    const float x = -1.0f + 2.0f * static_cast<float>(i) / 15.0f;
    return {torch::tensor({x}), torch::tensor({3 * x + 1}), {}};
  }
};

struct Points : fulgur::DataModule {
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<LinePoints>(),
                                                   fulgur::DatasetLoaderOptions(16).num_workers(2));
  }
};

// `consumer [STRATEGY DEVICES [CHECKPOINT]]`: the Trainer starts the other
// ranks itself; with CHECKPOINT the trained model is saved there (under
// fsdp as a sharded checkpoint: one file per rank).
int main(int argc, char** argv) {
  Line model(LineOptions().lr(0.1));
  Points data;
  const std::string strategy = argc > 2 ? argv[1] : "auto";
  const int64_t devices = argc > 2 ? std::stoll(argv[2]) : 1;
  fulgur::TrainerOptions options;
  if (strategy == "fsdp") options.fsdp(fulgur::FSDPOptions().state_dict_type("sharded"));
  fulgur::Trainer trainer(options
                              .max_steps(200)
                              .accelerator("cpu")
                              .devices(devices)
                              .strategy(strategy)
                              .logger(false)
                              .enable_checkpointing(false)
                              .enable_progress_bar(false));
  trainer.fit(model, data);
  if (argc > 3) trainer.save_checkpoint(argv[3]);
  std::cout << "rank=" << trainer.global_rank() << " world=" << trainer.world_size()
            << " steps=" << trainer.global_step() << " w=" << model.fc->module->weight.item<double>() << std::endl;
  if (trainer.world_size() != devices) return 1;
  return std::abs(model.fc->module->weight.item<double>() - 3.0) < 0.05 ? 0 : 1;
}
