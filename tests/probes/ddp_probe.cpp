// A training program for the distributed tests: an MLP classifier on a fixed
// synthetic dataset, driven by fulgur's CLI, that writes its final
// parameters (rank 0) to --model.output so runs can be compared.
//
//   ddp_probe fit --trainer.devices 2 --data.batch_size 8 --model.output params.pt
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/fulgur.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/horovod_strategy.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

// One of the programs in a multi-call binary (started through bin/ddp_probe).
namespace ddp_probe {

namespace {

namespace check = fulgur::check;

// The `model` section; -1 for a rank means none.
#define DDP_PROBE_MODEL_OPTIONS(X)                                                                            \
  X(std::string, output, "", "rank 0 writes the final parameters there", check::Any{})                        \
  X(int64_t, hidden, 32, "hidden units", check::AtLeast{1})                                                   \
  X(int64_t, depth, 0, "hidden x hidden layers after the first (a communication-heavy model)", check::AtLeast{0}) \
  X(double, lr, 0.2, "SGD learning rate (momentum 0.9)", check::Positive{})                                   \
  X(int64_t, mismatch_rank, -1, "that rank builds a model with one more hidden unit", check::Any{})           \
  X(bool, unused, false, "add a layer no step uses (DDP's find_unused_parameters case)", check::Any{})        \
  X(int64_t, kill_rank, -1, "that rank SIGKILLs itself at kill_step", check::Any{})                           \
  X(int64_t, kill_step, 3, "global step of kill_rank's SIGKILL", check::Any{})                                \
  X(int64_t, bad_reduce_rank, -1, "that rank reduces a differently shaped tensor", check::Any{})              \
  X(int64_t, improving_rank, -1, "an unsynced score improves every epoch on that rank only", check::Any{})    \
  X(int64_t, signal_rank, -1, "that rank alone raises SIGUSR1 at signal_step", check::Any{})                  \
  X(int64_t, signal_step, 3, "global step of signal_rank's SIGUSR1", check::Any{})                            \
  X(double, step_seconds, 0.0, "sleep in every step, so an outside signal lands mid-run", check::Any{})       \
  X(std::string, stop_file, "", "every rank writes '<global_step> <stop_signal>' to it.<rank>", check::Any{}) \
  X(std::string, pid_file, "", "every rank writes its pid to it.<rank>", check::Any{})                        \
  X(int64_t, sleep_rank, -1, "that rank keeps the others waiting once, at sleep_step", check::Any{})          \
  X(int64_t, sleep_step, 2, "global step of sleep_rank's sleep", check::Any{})                                \
  X(double, sleep_s, 0.0, "seconds sleep_rank sleeps", check::Any{})                                         \
  X(bool, batch_norm, false, "a BatchNorm1d after the first layer (buffers to broadcast)", check::Any{})        \
  X(bool, val_metric, false, "validation also logs a MeanMetric object (val_mean_loss)", check::Any{})         \
  X(std::string, count_file, "",                                                                              \
    "every rank writes what each training step communicated and read from the device to it.<rank>",        \
    check::Any{})

struct ProbeModelOptions {
  FULGUR_OPTIONS(ProbeModelOptions, DDP_PROBE_MODEL_OPTIONS)
};

struct ProbeModel : fulgur::LightningModule {
  using Options = ProbeModelOptions;
  explicit ProbeModel(const ProbeModelOptions& options) : o(options) {
    int64_t hidden = o.hidden();
    const char* rank = std::getenv("RANK");
    if (rank && std::atoll(rank) == o.mismatch_rank()) hidden += 1;
    torch::nn::Sequential layers(torch::nn::Linear(8, hidden));
    if (o.batch_norm()) layers->push_back(torch::nn::BatchNorm1d(hidden));
    layers->push_back(torch::nn::Tanh());
    for (int64_t i = 0; i < o.depth(); ++i) {
      layers->push_back(torch::nn::Linear(hidden, hidden));
      layers->push_back(torch::nn::Tanh());
    }
    layers->push_back(torch::nn::Linear(hidden, 4));
    net = register_module("net", layers);
    if (o.unused()) unused = register_module("unused", torch::nn::Linear(2, 2));
    if (o.val_metric()) val_mean = register_module("val_mean", std::make_shared<fulgur::metrics::MeanMetric>());
  }
  void on_train_start() override {
    // --model.pid_file F: every rank writes its pid to F.<rank>, for tests that signal one rank.
    if (!o.pid_file().empty()) {
      const std::string path = o.pid_file() + "." + std::to_string(global_rank());
      std::ofstream(path + ".tmp") << ::getpid() << "\n";
      std::filesystem::rename(path + ".tmp", path);
    }
    // --model.bad_reduce_rank R: that rank reduces a differently shaped tensor.
    const char* rank = std::getenv("RANK");
    const bool odd = rank && std::atoll(rank) == o.bad_reduce_rank();
    if (o.bad_reduce_rank() >= 0) trainer()->strategy().all_reduce(torch::ones({odd ? 3 : 2}), fulgur::ReduceOp::Sum);
  }
  // --model.count_file F: per training step (from one batch's start to the
  // next's), the main process group's collectives and the metric path's
  // host reads, as "<batches done> <global step> <last batch of epoch>
  // <collectives> <host reads>"; the first line says how many gradient
  // buckets and buffers there are.
  void on_train_batch_start(const fulgur::Batch&, int64_t batch_idx) override {
    if (o.count_file().empty()) return;
    auto* parallel = dynamic_cast<fulgur::DataParallelStrategy*>(&trainer()->strategy());
    if (parallel == nullptr) return;
    const int64_t collectives = parallel->process_group().counts().collectives();
    const int64_t reads = fulgur::ResultCollection::host_reads();
    if (batches_done > 0) {
      counts << batches_done << " " << trainer()->state().global_step() << " "
             << (previous_batch + 1 == trainer()->state().num_training_batches() ? 1 : 0) << " "
             << collectives - last_collectives << " " << reads - last_reads << "\n";
    } else {
      const auto* ddp = dynamic_cast<const fulgur::DDPStrategy*>(parallel);
      counts << "buckets " << (ddp && ddp->reducer() ? ddp->reducer()->num_buckets() : 0) << " buffers "
             << buffers().size() << "\n";
    }
    ++batches_done;
    previous_batch = batch_idx;
    last_collectives = collectives;
    last_reads = reads;
  }
  torch::Tensor training_step(const fulgur::Batch& b, int64_t) override {
    const char* rank = std::getenv("RANK");
    // A group torchrun restarted (--max-restarts) runs on: only the first attempt is killed.
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    const bool first_attempt = attempt == nullptr || std::string(attempt) == "0";
    if (global_rank() == o.kill_rank() && trainer()->state().global_step() == o.kill_step() && first_attempt) {
      std::raise(SIGKILL);
    }
    // --model.signal_rank R: that rank alone receives SIGUSR1 during step signal_step.
    if (global_rank() == o.signal_rank() && trainer()->state().global_step() == o.signal_step()) {
      std::raise(SIGUSR1);
    }
    // --model.step_seconds S: slow steps, so an outside signal lands mid-run.
    if (o.step_seconds() > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.step_seconds()));
    // --model.sleep_rank R --model.sleep_s S: that rank keeps the others waiting once.
    if (global_rank() == o.sleep_rank() && trainer()->state().global_step() == o.sleep_step() && !slept) {
      slept = true;
      std::this_thread::sleep_for(std::chrono::duration<double>(o.sleep_s()));
    }
    const torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(b.input), b.target);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  void validation_step(const fulgur::Batch& b, int64_t) override {
    const torch::Tensor logits = net->forward(b.input);
    log("val_loss", torch::nn::functional::cross_entropy(logits, b.target), {.sync_dist = true});
    log("val_acc", logits.argmax(1).eq(b.target).to(torch::kFloat32).mean(), {.sync_dist = true});
    if (val_mean) {
      log("val_max_loss", torch::nn::functional::cross_entropy(logits, b.target),
          {.reduce = fulgur::ReduceOp::Max, .sync_dist = true});
      namespace F = torch::nn::functional;
      val_mean->update(F::cross_entropy(logits, b.target, F::CrossEntropyFuncOptions().reduction(torch::kNone)));
      log("val_mean_loss", *val_mean);
    }
    // --model.improving_rank R: an unsynced score that improves every epoch on
    // rank R only, so ranks would disagree about stopping if each decided alone.
    if (o.improving_rank() >= 0) {
      const bool improving = global_rank() == o.improving_rank();
      log("rank_score", torch::tensor(improving ? 10.0 - static_cast<double>(trainer()->state().current_epoch()) : 10.0));
    }
  }
  void on_train_end() override {
    if (o.improving_rank() >= 0) {
      std::printf("rank %lld stopped at epoch %lld step %lld\n",
                  static_cast<long long>(global_rank()),
                  static_cast<long long>(trainer()->state().current_epoch()), static_cast<long long>(trainer()->state().global_step()));
      std::fflush(stdout);
    }
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(o.lr()).momentum(0.9)),
            std::nullopt};
  }
  void on_fit_end() override {
    const auto* horovod = dynamic_cast<const fulgur::HorovodStrategy*>(&trainer()->strategy());
    if (!o.count_file().empty()) {
      if (horovod && horovod->controller()) counts << "horovod_last_step " << horovod->controller()->collectives_last_step() << "\n";
      std::ofstream(o.count_file() + "." + std::to_string(global_rank())) << counts.str();
    }
    if (horovod && horovod->controller() && trainer()->is_global_zero()) {
      std::cout << "ddp_probe: collectives in the last step: " << horovod->controller()->collectives_last_step()
                << " for " << horovod->controller()->num_tensors() << " tensors" << std::endl;
    }
    // --model.stop_file F: every rank writes "<global_step> <stop_signal>" to F.<rank>.
    if (!o.stop_file().empty()) {
      std::ofstream(o.stop_file() + "." + std::to_string(global_rank()))
          << trainer()->state().global_step() << " " << trainer()->state().stop_signal() << "\n";
    }
    if (o.output().empty()) return;
    // Every rank takes part: a sharding strategy all-gathers each parameter.
    std::vector<torch::Tensor> params;
    for (const auto& p : parameters()) params.push_back(trainer()->strategy().whole_tensor(p, p).detach().cpu());
    if (!trainer()->is_global_zero()) return;
    const auto bytes = torch::pickle_save(torch::cat([&] {
      std::vector<torch::Tensor> flat;
      for (const auto& p : params) flat.push_back(p.reshape({-1}));
      return flat;
    }()));
    std::ofstream(o.output(), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const ProbeModelOptions o;
  torch::nn::Sequential net{nullptr};
  torch::nn::Linear unused{nullptr};
  std::shared_ptr<fulgur::metrics::MeanMetric> val_mean;
  bool slept = false;
  std::ostringstream counts;
  int64_t batches_done = 0;
  int64_t previous_batch = 0;
  int64_t last_collectives = 0;
  int64_t last_reads = 0;
};

#define DDP_PROBE_DATA_OPTIONS(X)                                    \
  X(int64_t, batch_size, 16, "samples per batch", check::AtLeast{1}) \
  X(int64_t, samples, 64, "samples in the dataset", check::AtLeast{1}) \
  X(int64_t, val_samples, -1, "samples in the validation set (-1: the training set)", check::AtLeast{-1}) \
  X(bool, second_val, false, "a second validation loader: the same inputs, each target one class on", check::Any{})

struct ProbeDataOptions {
  FULGUR_OPTIONS(ProbeDataOptions, DDP_PROBE_DATA_OPTIONS)
};

struct ProbeData : fulgur::DataModule {
  using Options = ProbeDataOptions;
  explicit ProbeData(const ProbeDataOptions& o)
      : batch_size(o.batch_size()), samples(o.samples()), val_samples(o.val_samples()), second_val(o.second_val()) {}
  std::shared_ptr<fulgur::DataLoader> loader(int64_t rows, int64_t shift = 0) {
    // The same data on every rank and every run, whatever the global seed.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
    const torch::Tensor x = torch::randn({samples, 8}, gen).narrow(0, 0, rows);
    const torch::Tensor y = (torch::randint(0, 4, {samples}, gen).narrow(0, 0, rows) + shift) % 4;
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<fulgur::TensorDataset>(x, y),
                                                   fulgur::DatasetLoaderOptions(batch_size).seed(0));
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(samples); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override {
    return loader(val_samples < 0 ? samples : std::min(val_samples, samples));
  }
  std::vector<std::shared_ptr<fulgur::DataLoader>> val_dataloaders() override {
    if (!second_val) return {val_dataloader()};
    return {val_dataloader(), loader(val_samples < 0 ? samples : std::min(val_samples, samples), 1)};
  }
  int64_t batch_size;
  int64_t samples;
  int64_t val_samples;
  bool second_val;
};

}  // namespace

int main(int argc, char** argv) { return fulgur::cli::run<ProbeModel, ProbeData>(argc, argv); }

}  // namespace ddp_probe
