// Both halves of bench/ensemble_offline.sh, each until the held-out error
// (heat_evaluate's: 18 unseen (kappa, A), mean relative L2 error) is at or
// below TARGET, with the model, optimizer, batch size and compute threads of
// ensemble.yaml:
//   serve: the online way, an EnsembleServer (one rank) the runs stream to;
//          the published model is evaluated every 50 ms; prints when it
//          reached TARGET (seconds since the server listened), then serves on
//          until the file's stop rule.
//   fit:   the offline way, the files the runs wrote (heat_client --write)
//          read into memory and trained with Trainer::fit, evaluated every
//          --eval_every steps; prints the seconds from the first file read.
//
//   ensemble_offline serve ensemble.yaml TARGET
//   ensemble_offline fit ensemble.yaml FILES_DIR TARGET [--eval_every 100] [--max_steps 30000]
#include "bench_support.hpp"

#include "../examples/ensemble/heat_rod.hpp"

#include <fulgur/ensemble/ensemble_config.hpp>
#include <fulgur/ensemble/ensemble_server.hpp>
#include <fulgur/fulgur.hpp>
#include <fulgur/online/configured_model.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

// One of the programs in a multi-call binary (started through bin/ensemble_offline).
namespace ensemble_offline {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;

// Every file of `dir` (heat_client --write): inputs [n, 3] and targets [n, 64].
std::pair<torch::Tensor, torch::Tensor> read_samples(const std::filesystem::path& dir) {
  std::vector<torch::Tensor> xs, ys;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    char magic[4] = {};
    int64_t count = 0;
    in.read(magic, 4);
    in.read(reinterpret_cast<char*>(&count), sizeof count);
    const auto bytes = static_cast<int64_t>(std::filesystem::file_size(entry.path()));
    if (!in || std::memcmp(magic, "FLGS", 4) != 0 || count < 1 ||
        bytes != 12 + count * (3 + heat_rod::kPoints) * 4) {
      throw std::invalid_argument("ensemble_offline: " + entry.path().string() + " is no heat_client --write file");
    }
    torch::Tensor x = torch::empty({count, 3}), y = torch::empty({count, heat_rod::kPoints});
    in.read(static_cast<char*>(x.data_ptr()), count * 3 * 4);
    in.read(static_cast<char*>(y.data_ptr()), count * heat_rod::kPoints * 4);
    xs.push_back(x);
    ys.push_back(y);
  }
  if (xs.empty()) throw std::invalid_argument("ensemble_offline: no files in " + dir.string());
  return {torch::cat(xs), torch::cat(ys)};
}

class Samples : public fulgur::DataModule {
 public:
  Samples(torch::Tensor x, torch::Tensor y, int64_t batch_size)
      : data_(std::make_shared<fulgur::TensorDataset>(std::move(x), std::move(y))), batch_size_(batch_size) {}
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(data_, fulgur::DatasetLoaderOptions(batch_size_).shuffle(true).seed(0));
  }

 private:
  std::shared_ptr<fulgur::TensorDataset> data_;
  int64_t batch_size_;
};

// heat_evaluate's figure: the mean over 18 held-out runs of ||f(x) - u|| / ||u||.
double held_out_error(const std::function<torch::Tensor(const torch::Tensor&)>& predict) {
  torch::NoGradGuard no_grad;
  static const std::vector<heat_rod::Run> runs = heat_rod::held_out_runs();
  double sum = 0.0;
  for (const heat_rod::Run& run : runs) {
    const torch::Tensor x = torch::from_blob(const_cast<float*>(run.inputs.data()), {run.samples(), 3});
    const torch::Tensor truth = torch::from_blob(const_cast<float*>(run.fields.data()), {run.samples(), heat_rod::kPoints});
    sum += ((predict(x) - truth).norm() / truth.norm()).item<double>();
  }
  return sum / static_cast<double>(runs.size());
}

/// Stops fit once the held-out error reaches the target.
class StopAtError : public fulgur::Callback {
 public:
  StopAtError(double target, int64_t every) : target_(target), every_(every) {}
  std::string state_key() const override { return "StopAtError"; }
  void on_train_batch_end(fulgur::Trainer& trainer, fulgur::LightningModule& module, const torch::Tensor&,
                          const fulgur::Batch&, int64_t) override {
    if (trainer.state().global_step() % every_ != 0) return;
    module.eval();
    error_ = held_out_error([&](const torch::Tensor& x) { return module.predict_step(fulgur::Batch{x, {}, {}}, 0); });
    module.train();
    if (error_ <= target_) trainer.request_stop();
  }
  double error() const { return error_; }

 private:
  double target_;
  int64_t every_;
  double error_ = -1.0;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

int serve(const fulgur::EnsembleConfig& config, double target) {
  auto trainer = config.online.make_trainer();
  fulgur::EnsembleServer server(*trainer, config.ensemble);
  const auto start = Clock::now();
  std::atomic<bool> served{false};
  std::thread serving([&] {
    server.serve();
    served = true;
  });
  double error = 1e9, reached_s = -1;
  int64_t reached_step = -1;
  while (!served) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (reached_s >= 0 || trainer->global_step() == 0) continue;
    error = held_out_error([&](const torch::Tensor& x) { return trainer->predict(x); });
    if (error <= target) {
      reached_s = seconds_since(start);
      reached_step = trainer->global_step();
    }
  }
  serving.join();
  int64_t received = 0;
  for (const auto& [client, account] : server.accounts()) received += account.received;
  if (reached_s < 0) {
    std::printf("ensemble_offline serve: held-out error %.4f after %ld steps and %.2f s: target %.4f NOT reached\n",
                error, trainer->global_step(), seconds_since(start), target);
    return 1;
  }
  std::printf("ensemble_offline serve: held-out error %.4f (target %.4f) reached in %.2f s at step %ld; the run "
              "ended after %.2f s, %ld steps, %ld samples received\n",
              error, target, reached_s, reached_step, seconds_since(start), trainer->global_step(), received);
  return 0;
}

int fit(const fulgur::EnsembleConfig& config, const std::filesystem::path& files, double target, int64_t every,
        int64_t max_steps) {
  const auto start = Clock::now();
  auto [x, y] = read_samples(files);
  const int64_t samples = x.size(0);
  Samples data(std::move(x), std::move(y), config.online.options.stream.batch_size);
  torch::manual_seed(config.online.seed);
  fulgur::ConfiguredModel model(config.online.model);
  // One process with the online server's compute threads.
  fulgur::TrainerOptions options;
  options.accelerator(fulgur::AcceleratorKind::Cpu).devices(1).max_steps(max_steps).max_epochs(-1)
      .logger(false).enable_checkpointing(false).enable_progress_bar(false).enable_model_summary(false);
  if (config.online.options.num_threads) at::set_num_threads(static_cast<int>(*config.online.options.num_threads));
  auto stop = std::make_shared<StopAtError>(target, every);
  fulgur::Trainer trainer(options, {stop});
  trainer.fit(model, data);
  const bool reached = stop->error() >= 0 && stop->error() <= target;
  std::printf("ensemble_offline fit: %ld samples, %ld steps, held-out error %.4f (target %.4f): %s in %.2f s\n",
              samples, trainer.state().global_step(), stop->error(), target, reached ? "reached" : "NOT reached",
              seconds_since(start));
  return reached ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "serve" && argc == 4) || (mode == "fit" && argc >= 5))) {
    std::fprintf(stderr,
                 "usage: ensemble_offline serve ensemble.yaml TARGET\n"
                 "       ensemble_offline fit ensemble.yaml FILES_DIR TARGET [--eval_every 100] [--max_steps 30000]\n");
    return 2;
  }
  try {
    const fulgur::EnsembleConfig config = fulgur::EnsembleConfig::from_yaml_file(argv[2]);
    if (mode == "serve") return serve(config, std::atof(argv[3]));
    return fit(config, argv[3], std::atof(argv[4]), flag(argc, argv, "--eval_every", int64_t{100}),
               flag(argc, argv, "--max_steps", int64_t{30000}));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ensemble_offline: %s\n", e.what());
    return 1;
  }
}

}  // namespace ensemble_offline
