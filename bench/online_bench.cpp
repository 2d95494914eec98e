// The online trainer beside a simulation, each figure against a peer
// measured in the same run:
//   1. a simulation thread's step time alone vs with background training
//      (training on 1 thread: --train_threads) pushing a sample every step,
//      and vs pushing without training (what push() itself costs);
//   2. background training's samples/s meanwhile;
//   3. predict() latency while training runs (median);
//   4. inline train_step against a bare LibTorch step of the same model
//      and optimizer (median of alternating pairs), and the cost of the
//      finiteness check (on_nonfinite) on the bare step.
//
//   online_bench [--grid 256] [--sim_steps 20000] [--pairs 7] [--train_threads 1]
#include "bench_support.hpp"

#include <fulgur/online/online_trainer.hpp>
#include <fulgur/engine/step_engine.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

// One of the programs in a multi-call binary (started through bin/online_bench).
namespace online_bench {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;
using fulgur::bench::median;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// A plain C++ Jacobi heat step on an n x n grid: the "simulation".
struct Simulation {
  explicit Simulation(int64_t n) : n(n), u(n * n, 0.0F), next(n * n, 0.0F) {
    for (int64_t i = n / 4; i < n / 2; ++i) {
      for (int64_t j = n / 4; j < n / 2; ++j) u[i * n + j] = 1.0F;
    }
  }
  void step() {
    for (int64_t i = 1; i + 1 < n; ++i) {
      for (int64_t j = 1; j + 1 < n; ++j) {
        const int64_t k = i * n + j;
        next[k] = u[k] + 0.2F * (u[k - 1] + u[k + 1] + u[k - n] + u[k + n] - 4 * u[k]);
      }
    }
    std::swap(u, next);
  }
  int64_t n;
  std::vector<float> u, next;
};

struct Mlp : fulgur::LightningModule {
  Mlp() {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(64, 256), torch::nn::Tanh(),
                                                       torch::nn::Linear(256, 256), torch::nn::Tanh(),
                                                       torch::nn::Linear(256, 64)));
  }
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t) override {
    return torch::mse_loss(net->forward(batch.input), batch.target);
  }
  torch::Tensor predict_step(const fulgur::Batch& batch, int64_t) override { return net->forward(batch.input); }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(1e-3)), std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

fulgur::OnlineOptions options_for(int64_t train_threads) {
  fulgur::OnlineOptions o;
  o.trainer = fulgur::TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).logger(false);
  o.stream = fulgur::SampleStreamOptions{.capacity = 4096, .when_full = fulgur::WhenFull::Replay, .batch_size = 64};
  o.num_threads = train_threads;
  o.publish_every_n_steps = 20;
  return o;
}

/// Seconds per simulation step over `steps`, pushing one sample per step
/// when `online` is given.
double simulate(Simulation& sim, int64_t steps, fulgur::OnlineTrainer* online) {
  const auto start = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    sim.step();
    if (online != nullptr) {
      // 64 values of the field as the input, the next 64 as the target.
      online->push(torch::from_blob(sim.u.data(), {1, 64}), torch::from_blob(sim.u.data() + 64, {1, 64}));
    }
  }
  return seconds_since(start) / static_cast<double>(steps);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t grid = flag(argc, argv, "--grid", int64_t{256});
  const int64_t sim_steps = flag(argc, argv, "--sim_steps", int64_t{20000});
  const int64_t pairs = flag(argc, argv, "--pairs", int64_t{7});
  const int64_t train_threads = flag(argc, argv, "--train_threads", int64_t{1});
  at::set_num_threads(1);  // the simulation thread's own torch work (push) stays on its core

  // 1-3: the simulation alone and beside background training, alternating.
  std::vector<double> ratios, push_ratios, samples_per_s, latencies;
  for (int64_t p = 0; p < pairs; ++p) {
    Simulation alone(grid), beside(grid), pushing(grid);
    const double t_alone = simulate(alone, sim_steps, nullptr);
    {  // pushing only (training not started): the cost of push() itself
      fulgur::OnlineTrainer idle([] { return std::make_shared<Mlp>(); }, options_for(train_threads));
      push_ratios.push_back(simulate(pushing, sim_steps, &idle) / t_alone);
    }
    torch::manual_seed(0);
    fulgur::OnlineTrainer online([] { return std::make_shared<Mlp>(); }, options_for(train_threads));
    simulate(beside, 100, &online);  // fill the replay buffer's first batch
    online.start();
    const int64_t steps_before = online.global_step();
    const auto train_start = Clock::now();
    const double t_beside = simulate(beside, sim_steps, &online);
    const double train_seconds = seconds_since(train_start);
    const int64_t trained = online.global_step() - steps_before;
    const torch::Tensor probe = torch::rand({1, 64});
    for (int i = 0; i < 50; ++i) {
      const auto start = Clock::now();
      online.predict(probe);
      latencies.push_back(seconds_since(start));
    }
    online.stop();
    ratios.push_back(t_beside / t_alone);
    samples_per_s.push_back(static_cast<double>(trained) * 64.0 / train_seconds);
    std::printf("pair %lld: sim step alone %.1f us, beside training %.1f us (x%.3f); training %.0f samples/s\n",
                static_cast<long long>(p), t_alone * 1e6, t_beside * 1e6, ratios.back(), samples_per_s.back());
  }

  // 4: inline train_step against a bare LibTorch step, alternating.
  std::vector<double> inline_ratios, check_costs, check_ratios;
  const torch::Tensor x = torch::rand({64, 64}), y = torch::rand({64, 64});
  for (int64_t p = 0; p < pairs; ++p) {
    torch::manual_seed(0);
    Mlp bare;
    torch::optim::Adam adam(bare.parameters(), torch::optim::AdamOptions(1e-3));
    fulgur::OnlineOptions o = options_for(train_threads);
    fulgur::OnlineTrainer online([] { return std::make_shared<Mlp>(); }, o);
    const int steps = 1000;
    at::set_num_threads(static_cast<int>(train_threads));
    auto run_bare = [&] {
      const auto start = Clock::now();
      for (int s = 0; s < steps; ++s) {
        torch::Tensor loss = torch::mse_loss(bare.net->forward(x), y);
        loss.backward();
        adam.step();
        adam.zero_grad();
        (void)loss.item<double>();  // train_step returns the loss to the host too
      }
      return seconds_since(start);
    };
    // The bare step plus what OnlineTrainer adds to decide that a step is
    // finite (loss and every gradient; OnlineOptions::on_nonfinite): its cost alone.
    auto run_bare_checked = [&] {
      const auto start = Clock::now();
      for (int s = 0; s < steps; ++s) {
        torch::Tensor loss = torch::mse_loss(bare.net->forward(x), y);
        loss.backward();
        if (!fulgur::StepEngine::gradients_finite(bare)) std::abort();
        adam.step();
        adam.zero_grad();
        (void)loss.item<double>();
      }
      return seconds_since(start);
    };
    auto run_inline = [&] {
      const auto start = Clock::now();
      for (int s = 0; s < steps; ++s) online.train_step(x, y);
      return seconds_since(start);
    };
    // The order alternates from pair to pair, so drift hits both sides.
    double t_bare = 0.0, t_inline = 0.0, t_checked = 0.0;
    if (p % 2 == 0) {
      t_bare = run_bare();
      t_checked = run_bare_checked();
      t_inline = run_inline();
    } else {
      t_inline = run_inline();
      t_checked = run_bare_checked();
      t_bare = run_bare();
    }
    inline_ratios.push_back(t_inline / t_bare);
    check_costs.push_back((t_checked - t_bare) / steps);
    check_ratios.push_back(t_checked / t_bare);
    std::printf("pair %lld: bare step %.1f us, inline train_step %.1f us (x%.3f)\n", static_cast<long long>(p),
                t_bare / steps * 1e6, t_inline / steps * 1e6, inline_ratios.back());
    at::set_num_threads(1);
  }

  std::printf("\nmedian over %lld pairs (grid %lld, training threads %lld):\n", static_cast<long long>(pairs),
              static_cast<long long>(grid), static_cast<long long>(train_threads));
  std::printf("  simulation step pushing a sample (no training) / alone: x%.3f\n", median(push_ratios));
  std::printf("  simulation step beside background training / alone: x%.3f (target <= 1.10)\n", median(ratios));
  std::printf("  background training: %.0f samples/s (batch 64, MLP 64-256-256-64)\n", median(samples_per_s));
  std::printf("  predict latency while training: %.1f us (median of %zu)\n", median(latencies) * 1e6,
              latencies.size());
  std::printf("  inline train_step / bare LibTorch step: x%.3f (target <= 1.05)\n", median(inline_ratios));
  std::printf("  finiteness check (loss and gradients, one rank): %+.1f us per step, bare step x%.3f\n",
              median(check_costs) * 1e6, median(check_ratios));
  return 0;
}

}  // namespace online_bench
