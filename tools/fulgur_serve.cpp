// An ensemble's training job (docs/ensemble.md): simulations stream
// samples over the network (EnsembleClient, fulgur_client.h) into an online
// trainer on every rank of this job, which trains one model.
//
//   fulgur_serve --config ensemble.yaml              one rank
//   srun -n 4 fulgur_serve --config ensemble.yaml    (or mpirun, torchrun) four ranks
//
// The file is an online trainer's (model, loss, optimizer, lr_scheduler,
// seed, online, stream, trainer; docs/online.md) plus an `ensemble:` section:
//   ensemble: {run_dir: run, expected_clients: 32, min_steps: 0, host: "", port: 0,
//              max_message_bytes: 268435456, time_limit_s: 0, drain_s: 5, client_timeout_s: 10}
// At the end every rank saves the weights to run_dir/model.ckpt (online.ckpt
// format: OnlineTrainer::load_checkpoint) and rank 0 writes the accounting.
// Stopped by SIGTERM, SIGINT or SIGUSR1 (with online.checkpoint_dir) it
// exits with 128 + the signal, as the online layer's programs do.
// Every client holds a connection (a file descriptor) on every rank: the tool
// raises its own soft limit on open files to the hard one first.
#include <fulgur/core/stop_signals.hpp>
#include <fulgur/ensemble/ensemble_config.hpp>
#include <fulgur/ensemble/ensemble_server.hpp>

#include <fmt/format.h>
#include <sys/resource.h>

#include <exception>
#include <iostream>
#include <string>

namespace {

const char* kUsage =
    "usage: fulgur_serve --config FILE.yaml\n"
    "Trains one model on the samples an ensemble of simulations streams to it (docs/ensemble.md).\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--config") {
    std::cerr << kUsage;
    return 2;
  }
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);  // this program's own limit: more clients connect at once
  }
  try {
    const fulgur::EnsembleConfig config = fulgur::EnsembleConfig::from_yaml_file(argv[2]);
    const fulgur::EnsembleOptions& options = config.ensemble;
    std::unique_ptr<fulgur::OnlineTrainer> trainer = config.online.make_trainer();
    fulgur::EnsembleServer server(*trainer, options);
    server.serve();
    if (const int signal = trainer->stop_signal(); signal != 0) {
      // Saved to checkpoint_dir, counts kept in run_dir: an unfinished run the scheduler should see as one.
      if (trainer->fabric().is_global_zero()) {
        std::cout << fmt::format("fulgur_serve: stopped on {} at step {}; started again it resumes",
                                 fulgur::StopSignals::name(signal), trainer->global_step())
                  << std::endl;
      }
      return 128 + signal;
    }
    trainer->save_checkpoint(options.run_dir / "model.ckpt");
    if (trainer->fabric().is_global_zero()) {
      std::cout << fmt::format("fulgur_serve: {} steps; weights in {}", trainer->global_step(),
                               (options.run_dir / "model.ckpt").string())
                << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fulgur_serve: " << e.what() << std::endl;
    return 1;
  }
}
