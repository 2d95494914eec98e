// A program that owns its loop, for the online tests under mpirun: each rank
// trains on its slice of one fixed global stream (8 batches of 8 samples),
// then rank 0 writes the final parameters, flattened, to OUTPUT.
//
//   online_probe inline|horovod|fsdp|fsdp_full|fabric|fabric_sharded|fit|nan|tp_inline|tp_fabric OUTPUT
//   online_probe resume OUTPUT CHECKPOINT_DIR STOP_AT
//   online_probe rates OUTPUT
//   online_probe die OUTPUT CHECKPOINT_DIR
//
// inline: OnlineTrainer::train_step (horovod: the same under the horovod
// strategy's ring allreduce; fsdp: under fsdp SHARD_GRAD_OP; fsdp_full: FULL_SHARD), each also writing
// predict()'s output to OUTPUT.predict; fabric: Fabric::training_step;
// fabric_sharded: Fabric under fsdp SHARD_GRAD_OP with state_dict_type sharded and
// async_checkpoint saves after step 4 (OUTPUT.ckpt), trains to step 8 (OUTPUT), loads the
// checkpoint and trains steps 5 to 8 again (OUTPUT.resumed); fit:
// Trainer::fit over a SampleStream; resume: inline with a checkpoint folder,
// raising SIGTERM inside step STOP_AT (-1: never; between steps the signal
// is the program's own, as it is a guest's), exiting 143 once the
// trainer saved and stopped, and resuming from the folder when restarted.
// rates (2 ranks): background training from replay buffers fed at different
// rates, rank 1's simulation ending first; each rank writes its step count,
// samples pushed and parameters to OUTPUT.rankR. die (2 ranks): rank 1 is
// SIGKILLed after step 5; rank 0 pushes until a push fails, prints the
// error, then predicts from the weights it kept. nan (2 ranks): rank 1's
// fourth batch holds a NaN; each rank prints how it stopped. tp_inline,
// tp_fabric: the network split over tp 2 (strategy model_parallel), trained
// inline (each rank its half of every batch) or by Fabric (every rank the
// whole batch); tp_inline also writes predict()'s output (OUTPUT.predict)
// and a checkpoint (OUTPUT.ckpt).
// Under several ranks (mpirun, the
// rendezvous from FULGUR_FILE_STORE) the strategy is ddp.
#include <fulgur/fulgur.hpp>
#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/online/stream_data_module.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <thread>

#include <unistd.h>

// One of the programs in a multi-call binary (started through bin/online_probe).
namespace online_probe {

namespace {

using namespace fulgur;

// Set by the resume mode: the next training step raises SIGTERM, as SLURM
// would in the middle of one.
bool g_sigterm_in_step = false;

struct Mlp : LightningModule {
  Mlp() {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(4, 16), torch::nn::Tanh(),
                                                       torch::nn::Linear(16, 2)));
  }
  torch::Tensor training_step(const Batch& batch, int64_t) override {
    if (g_sigterm_in_step) {
      g_sigterm_in_step = false;
      std::raise(SIGTERM);
    }
    return torch::mse_loss(net->forward(batch.input), batch.target);
  }
  torch::Tensor predict_step(const Batch& batch, int64_t) override { return net->forward(batch.input); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)),
            std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

// The same network, its layers split over a mesh's tp ranks (configure_model).
struct TpMlp : LightningModule {
  TpMlp() {
    fc1 = register_module("fc1", ShardableLinear(4, 16));
    fc2 = register_module("fc2", ShardableLinear(16, 2));
  }
  void configure_model(DeviceMesh& mesh) override {
    parallelize_module(*this, mesh, {{"fc1", ColwiseParallel()}, {"fc2", RowwiseParallel()}});
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(torch::tanh(fc1->forward(x))); }
  torch::Tensor training_step(const Batch& batch, int64_t) override { return torch::mse_loss(forward(batch.input), batch.target); }
  torch::Tensor predict_step(const Batch& batch, int64_t) override { return forward(batch.input); }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)),
            std::nullopt};
  }
  ShardableLinear fc1{nullptr}, fc2{nullptr};
};

void write_tensor(const torch::Tensor& tensor, const std::string& path) {
  const auto bytes = torch::pickle_save(tensor);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Every rank: the parameters whole (a collective under tp); rank 0 writes them.
void write_whole_parameters(Strategy& strategy, torch::nn::Module& module, const std::string& path, bool writes) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : module.parameters()) flat.push_back(strategy.whole_tensor(p, p).detach().reshape({-1}));
  if (writes) write_tensor(torch::cat(flat), path);
}

// predict() on three fixed inputs, to OUTPUT.predict.
void write_prediction(OnlineTrainer& trainer, const std::string& output, bool writes) {
  torch::manual_seed(5);
  const torch::Tensor predicted = trainer.predict(torch::rand({3, 4}));
  if (writes) write_tensor(predicted.reshape({-1}), output + ".predict");
}

void write_parameters(torch::nn::Module& module, const std::string& path) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : module.parameters()) flat.push_back(p.detach().reshape({-1}));
  write_tensor(torch::cat(flat), path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::cerr << "usage: online_probe inline|horovod|fabric|fit|rates OUTPUT, online_probe die OUTPUT DIR, or "
                 "online_probe resume OUTPUT DIR STOP_AT\n";
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
                                 .default_root_dir(std::filesystem::path(output).parent_path().string())
                                 .process_group_timeout(60.0);
    const bool tp = mode == "tp_inline" || mode == "tp_fabric";
    if (world > 1 && tp) {
      options.strategy(StrategyKind::ModelParallel)
          .devices(world)
          .model_parallel(ModelParallelOptions().tensor_parallel_size(world).data_parallel(DataParallelKind::DDP));
    } else if (world > 1) {
      options.strategy(mode == "horovod"                               ? StrategyKind::Horovod
                       : mode == "fsdp" || mode == "fsdp_full" || mode == "fabric_sharded" ? StrategyKind::FSDP
                                                                                            : StrategyKind::DDP)
          .devices(world)
          .fsdp(FSDPOptions()
                    .sharding_strategy(mode == "fsdp_full" ? ShardingStrategy::FullShard : ShardingStrategy::ShardGradOp)
                    .min_num_params(16)
                    .state_dict_type(mode == "fabric_sharded" ? StateDictType::Sharded : StateDictType::Full));
    }
    if (mode == "fabric_sharded") options.async_checkpoint(true);  // whole files (one rank) in the background

    // The global stream: rank r takes rows [r * 8 / world, (r + 1) * 8 / world) of each batch
    // (tp_fabric: every rank the whole batch, as the ranks of a tp group compute one).
    torch::manual_seed(11);
    std::vector<Batch> local;
    const int64_t rows = mode == "tp_fabric" ? 8 : 8 / world;
    const int64_t slice = mode == "tp_fabric" ? 0 : rank;
    for (int i = 0; i < 8; ++i) {
      const torch::Tensor x = torch::rand({8, 4}) * 2 - 1;
      const torch::Tensor y = torch::stack({x.sum(1).sin(), x.narrow(1, 0, 2).prod(1)}, 1);
      local.push_back(Batch{x.narrow(0, slice * rows, rows), y.narrow(0, slice * rows, rows), {}});
    }

    torch::manual_seed(3);
    if (mode == "nan") {
      // Rank 1's fourth batch holds a NaN: every rank must stop at that step, none may wait.
      if (rank == 1) local[3].input[0][0] = std::numeric_limits<float>::quiet_NaN();
      OnlineOptions online;
      online.trainer = options;
      OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online, {}, platform);
      try {
        for (const Batch& b : local) trainer.train_step(b.input, b.target);
        std::cout << "rank " << rank << " trained on" << std::endl;
      } catch (const std::exception& e) {
        std::cout << "rank " << rank << " stopped at step " << trainer.global_step() << ": " << e.what() << std::endl;
      }
      if (rank == 0) write_parameters(trainer.module(), output);
      return 0;
    }
    if (mode == "inline" || mode == "horovod" || mode == "fsdp" || mode == "fsdp_full") {
      OnlineOptions online;
      online.trainer = options;
      OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online, {}, platform);
      for (const Batch& b : local) trainer.train_step(b.input, b.target);
      write_whole_parameters(trainer.fabric().strategy(), trainer.module(), output, rank == 0);
      write_prediction(trainer, output, rank == 0);
    } else if (mode == "resume" && argc == 5) {
      OnlineOptions online;
      online.trainer = options;
      online.checkpoint_dir = argv[3];
      const int64_t stop_at = std::stoll(argv[4]);
      OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online, {}, platform);
      // The program knows where its stream stands from the trainer's step.
      for (auto i = static_cast<size_t>(trainer.global_step()); i < local.size(); ++i) {
        g_sigterm_in_step = static_cast<int64_t>(i) == stop_at;
        trainer.train_step(local[i].input, local[i].target);
        if (trainer.stop_signal() != 0) return 128 + trainer.stop_signal();
      }
      if (rank == 0) write_parameters(trainer.module(), output);
    } else if (mode == "rates" || (mode == "die" && argc == 4)) {
      OnlineOptions online;
      online.trainer = options;
      online.stream = SampleStreamOptions{
          .capacity = 64, .when_full = WhenFull::Replay, .batch_size = 4, .seed = 5, .min_samples = 8};
      online.publish_every_n_steps = 1;
      if (mode == "die") online.checkpoint_dir = argv[3];
      OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online, {}, platform);
      trainer.start();
      auto push = [&](int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const Batch& b = local[static_cast<size_t>(i) % local.size()];
          trainer.push(b.input.narrow(0, 0, 1), b.target.narrow(0, 0, 1));
        }
      };
      int64_t pushed = 0;
      if (mode == "die") {
        if (rank == 1) {
          while (trainer.global_step() < 5) {
            push(1);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          ::kill(::getpid(), SIGKILL);  // a rank that dies without a word
        }
        try {
          for (;;) {
            push(4);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        } catch (const std::exception& e) {
          std::cout << "push failed: " << e.what() << std::endl;
        }
        const bool finite = torch::isfinite(trainer.predict(local[0].input)).all().item<bool>();
        std::cout << "predict after the failure: " << (finite ? "finite" : "NOT finite") << " at step "
                  << trainer.published_step() << " of " << trainer.global_step() << std::endl;
        try {
          trainer.stop();
        } catch (const std::exception&) {
          // the same error again
        }
        return 0;
      }
      // rates: rank 1 pushes one sample per 4 ms and ends after 24; rank 0 pushes 4 per ms until training ends.
      if (rank == 1) {
        for (int i = 0; i < 24; ++i, ++pushed) {
          push(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(4));
        }
      } else {
        while (trainer.running()) {
          push(4);
          pushed += 4;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      trainer.stop();
      const std::string mine = output + ".rank" + std::to_string(rank);
      std::ofstream(mine + ".txt") << "steps=" << trainer.global_step() << " pushed=" << pushed << "\n";
      write_parameters(trainer.module(), mine + ".pt");
    } else if (mode == "tp_inline") {
      // Each rank pushes its half of every batch; the tp group trains on both halves, publishes whole weights
      // (predict() on rank 0 against one process's) and saves a whole checkpoint.
      OnlineOptions online;
      online.trainer = options;
      OnlineTrainer trainer([] { return std::make_shared<TpMlp>(); }, online, {}, platform);
      for (const Batch& b : local) trainer.train_step(b.input, b.target);
      write_whole_parameters(trainer.fabric().strategy(), trainer.module(), output, rank == 0);
      trainer.save_checkpoint(output + ".ckpt");
      write_prediction(trainer, output, rank == 0);
    } else if (mode == "tp_fabric") {
      TpMlp model;
      Fabric fabric(options, {}, platform);
      fabric.setup(model);
      for (const Batch& b : local) fabric.training_step(b);
      write_whole_parameters(fabric.strategy(), model, output, rank == 0);
    } else if (mode == "fabric") {
      Mlp model;  // outlives the Fabric
      Fabric fabric(options, {}, platform);
      fabric.setup(model);
      for (const Batch& b : local) fabric.training_step(b);
      if (rank == 0) write_parameters(model, output);
    } else if (mode == "fabric_sharded") {
      Mlp model;
      Fabric fabric(options, {}, platform);
      fabric.setup(model);
      for (size_t i = 0; i < 4; ++i) fabric.training_step(local[i]);
      fabric.save_checkpoint(output + ".ckpt");
      for (size_t i = 4; i < 8; ++i) fabric.training_step(local[i]);
      if (rank == 0) write_parameters(model, output);
      fabric.load_checkpoint(output + ".ckpt");  // every rank: its rows of the sharded optimizer state
      if (fabric.global_step() != 4) throw std::runtime_error("loaded step " + std::to_string(fabric.global_step()));
      for (size_t i = 4; i < 8; ++i) fabric.training_step(local[i]);
      if (rank == 0) write_parameters(model, output + ".resumed");
    } else if (mode == "fit") {
      Mlp model;
      auto stream = std::make_shared<SampleStream>(
          SampleStreamOptions{.capacity = 64, .batch_size = rows, .steps_per_epoch = 4});
      for (const Batch& b : local) stream->push(b.input, b.target);
      stream->end();
      StreamDataModule data(stream);
      Trainer trainer(options.max_epochs(-1), {}, {}, platform);
      trainer.fit(model, data);
      if (trainer.state().global_step() != 8) throw std::runtime_error("fit took " + std::to_string(trainer.state().global_step()) + " steps");
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
