// In-situ training: a 2D heat-diffusion simulation, split by rows over its
// MPI ranks (halo exchange with MPI), trains a small CNN surrogate of its
// own step in the background while it keeps stepping, then switches to the
// surrogate for some steps and reports its error against the solver.
//
//   mpirun -np 2 -x FULGUR_FILE_STORE=$PWD/rendezvous build/bin/heat_insitu --train_steps 400
//
// --accelerator gpu trains on the GPU (the simulation stays on the CPU);
// --alone_steps N times N simulation steps before training starts, for the
// last line: the simulation's step time alone and while training.
//
// Each rank pushes its own rows; the ranks train one model with DDP (the
// process group from mpirun's variables and the FileStore; fulgur never
// touches MPI_COMM_WORLD).
#include "heat_solver.hpp"
#include "heat_surrogate.hpp"

#include <fulgur/online/online_trainer.hpp>

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Args {
  int64_t train_steps = 400;
  int64_t rollout = 10;
  int64_t grid = 64;
  int64_t threads = 1;
  int64_t alone_steps = 200;
  fulgur::AcceleratorKind accelerator = fulgur::AcceleratorKind::Cpu;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--accelerator") {
      try {
        a.accelerator = fulgur::parse_choice<fulgur::AcceleratorKind>(argv[i + 1]);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--accelerator ") + e.what());
      }
      continue;
    }
    const int64_t value = std::stoll(argv[i + 1]);
    if (key == "--train_steps") {
      a.train_steps = value;
    } else if (key == "--rollout") {
      a.rollout = value;
    } else if (key == "--grid") {
      a.grid = value;
    } else if (key == "--threads") {
      a.threads = value;
    } else if (key == "--alone_steps") {
      a.alone_steps = value;
    } else {
      throw std::invalid_argument("unknown option " + key +
                                  " (--train_steps, --rollout, --grid, --threads, --alone_steps, --accelerator)");
    }
  }
  return a;
}

torch::Tensor as_batch(const torch::Tensor& field) { return field.unsqueeze(0).unsqueeze(0); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  try {
    const Args args = parse(argc, argv);
    fulgur::OnlineOptions options;
    options.trainer = fulgur::TrainerOptions()
                          .accelerator(args.accelerator)
                          .enable_progress_bar(false)
                          .enable_model_summary(false)
                          .logger(false);
    if (size > 1) options.trainer.strategy(fulgur::StrategyKind::DDP).devices(size);
    // A replay buffer: training takes its steps at its own pace, the
    // simulation never waits, and every rank always has a batch.
    options.stream = fulgur::SampleStreamOptions{.capacity = 2048,
                                                 .when_full = fulgur::WhenFull::Replay,
                                                 .batch_size = 16,
                                                 .seed = static_cast<uint64_t>(rank) + 1};
    options.publish_every_n_steps = 50;
    options.max_steps = args.train_steps;
    options.num_threads = args.threads;  // the simulation keeps the other cores
    fulgur::seed_everything(0);  // not torch::manual_seed: it would hide the GPU (docs/user-guide.md)
    fulgur::OnlineTrainer online([] { return std::make_shared<insitu::HeatSurrogate>(); }, options);

    insitu::HeatSolver solver(MPI_COMM_WORLD, args.grid, args.grid, 0.2);
    solver.reset(1);
    // The simulation's own step time (the same clone and step, no push), before training starts.
    const auto alone_started = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < args.alone_steps; ++i) {
      const torch::Tensor before = solver.field().clone();
      solver.step();
      if ((i + 1) % 25 == 0) solver.reset(static_cast<uint64_t>(i) + 2);
    }
    const double alone_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - alone_started).count();
    solver.reset(1);
    const auto started = std::chrono::steady_clock::now();
    online.start();
    int64_t sim_steps = 0;
    for (;;) {
      // Every rank steps until every rank's training is done.
      int mine = online.running() ? 1 : 0, any = 0;
      MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (any == 0) break;
      const torch::Tensor before = solver.field().clone();
      solver.step();
      ++sim_steps;
      online.push(as_batch(before), as_batch(solver.field()));
      if (sim_steps % 25 == 0) solver.reset(static_cast<uint64_t>(sim_steps) + 1);  // new hot spots
    }
    online.stop();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    // An unseen start, smoothed by a few solver steps; then the surrogate
    // steps alone (its halos exchanged like the solver's) beside the solver.
    solver.reset(12345);
    for (int i = 0; i < 5; ++i) solver.step();
    torch::Tensor u = solver.field().clone();
    for (int64_t k = 0; k < args.rollout; ++k) {
      solver.step();
      u = online.predict(as_batch(u))[0][0].contiguous();
      u.select(1, 0).zero_();
      u.select(1, args.grid - 1).zero_();
      solver.exchange_halos(u);
    }
    const double error = std::sqrt(solver.global_sum_of_squares(u - solver.field()) /
                                   solver.global_sum_of_squares(solver.field()));
    if (rank == 0) {
      std::printf("insitu: %d rank(s), %lld simulation steps while training %lld steps (%.1f s)\n", size,
                  static_cast<long long>(sim_steps), static_cast<long long>(online.global_step()), seconds);
      std::printf("insitu: surrogate relative L2 error after %lld steps on its own: %.4f\n",
                  static_cast<long long>(args.rollout), error);
      if (args.alone_steps > 0 && sim_steps > 0) {
        const double alone_ms = 1e3 * alone_seconds / static_cast<double>(args.alone_steps);
        const double beside_ms = 1e3 * seconds / static_cast<double>(sim_steps);
        std::printf("insitu: simulation step %.4f ms alone (%lld steps), %.4f ms while training (%.2fx)\n", alone_ms,
                    static_cast<long long>(args.alone_steps), beside_ms, beside_ms / alone_ms);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat_insitu (rank %d): %s\n", rank, e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
