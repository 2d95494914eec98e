// A program that owns its loop, for the online tests under mpirun: each rank
// trains on its slice of one fixed global stream (8 batches of 8 samples),
// then rank 0 writes the final parameters, flattened, to OUTPUT.
//
//   online_probe inline|horovod|fabric|fit OUTPUT
//   online_probe resume OUTPUT CHECKPOINT_DIR STOP_AT
//
// inline: OnlineTrainer::train_step (horovod: the same under the horovod
// strategy's ring allreduce); fabric: Fabric::training_step; fit:
// Trainer::fit over a SampleStream; resume: inline with a checkpoint folder,
// raising SIGTERM before step STOP_AT (-1: never), exiting 143 once the
// trainer saved and stopped, and resuming from the folder when restarted.
// Under several ranks (mpirun, the
// rendezvous from FULGUR_FILE_STORE) the strategy is ddp.
#include <fulgur/fulgur.hpp>
#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/online/stream_data_module.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

// One of the programs in a multi-call binary (started through bin/online_probe).
namespace online_probe {

namespace {

using namespace fulgur;

struct Mlp : LightningModule {
  Mlp() {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(4, 16), torch::nn::Tanh(),
                                                       torch::nn::Linear(16, 2)));
  }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    return torch::mse_loss(net->forward(batch.input), batch.target);
  }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)),
            std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

void write_parameters(torch::nn::Module& module, const std::string& path) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : module.parameters()) flat.push_back(p.detach().reshape({-1}));
  const auto bytes = torch::pickle_save(torch::cat(flat));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::cerr << "usage: online_probe inline|horovod|fabric|fit OUTPUT, or online_probe resume OUTPUT DIR STOP_AT\n";
    return 2;
  }
  const std::string mode = argv[1];
  const std::string output = argv[2];
  try {
    const Platform platform = Platform::detect();
    const int64_t world = platform.world_size;
    const int64_t rank = platform.environment ? platform.environment->global_rank() : 0;
    TrainerOptions options = TrainerOptions()
                                 .accelerator(AcceleratorKind::Cpu)
                                 .enable_progress_bar(false)
                                 .enable_model_summary(false)
                                 .logger(false)
                                 .enable_checkpointing(false)
                                 .default_root_dir(std::filesystem::path(output).parent_path().string());
    if (world > 1) options.strategy(mode == "horovod" ? StrategyKind::Horovod : StrategyKind::DDP).devices(world);

    // The global stream: rank r takes rows [r * 8 / world, (r + 1) * 8 / world) of each batch.
    torch::manual_seed(11);
    std::vector<Batch> local;
    const int64_t rows = 8 / world;
    for (int i = 0; i < 8; ++i) {
      const torch::Tensor x = torch::rand({8, 4}) * 2 - 1;
      const torch::Tensor y = torch::stack({x.sum(1).sin(), x.narrow(1, 0, 2).prod(1)}, 1);
      local.push_back(Batch{x.narrow(0, rank * rows, rows), y.narrow(0, rank * rows, rows), {}});
    }

    torch::manual_seed(3);
    if (mode == "inline" || mode == "horovod") {
      OnlineOptions online;
      online.trainer = options;
      OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online, {}, platform);
      for (const Batch& b : local) trainer.train_step(b.input, b.target);
      if (rank == 0) write_parameters(trainer.module(), output);
    } else if (mode == "resume" && argc == 5) {
      OnlineOptions online;
      online.trainer = options;
      online.checkpoint_dir = argv[3];
      const int64_t stop_at = std::stoll(argv[4]);
      OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online, {}, platform);
      // The program knows where its stream stands from the trainer's step.
      for (auto i = static_cast<size_t>(trainer.global_step()); i < local.size(); ++i) {
        if (static_cast<int64_t>(i) == stop_at) std::raise(SIGTERM);  // as SLURM would, mid-run
        trainer.train_step(local[i].input, local[i].target);
        if (trainer.stop_signal() != 0) return 128 + trainer.stop_signal();
      }
      if (rank == 0) write_parameters(trainer.module(), output);
    } else if (mode == "fabric") {
      Mlp model;  // outlives the Fabric
      Fabric fabric(options, {}, platform);
      fabric.setup(model);
      for (const Batch& b : local) fabric.training_step(b);
      if (rank == 0) write_parameters(model, output);
    } else if (mode == "fit") {
      Mlp model;
      auto stream = std::make_shared<SampleStream>(
          SampleStreamOptions{.capacity = 64, .batch_size = rows, .steps_per_epoch = 4});
      for (const Batch& b : local) stream->push(b.input, b.target);
      stream->end();
      StreamDataModule data(stream);
      Trainer trainer(options.max_epochs(-1), {}, {}, platform);
      trainer.fit(model, data);
      if (trainer.global_step() != 8) throw std::runtime_error("fit took " + std::to_string(trainer.global_step()) + " steps");
      if (rank == 0) write_parameters(model, output);
    } else {
      std::cerr << "online_probe: unknown mode " << mode << "\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "online_probe: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace online_probe
