// A program that embeds fulgur and keeps its process: its own SIGTERM
// handler and its own child process (a `sleep`) around a 2-rank fit.
//
//   host_probe finish|held|two DIR
//
// finish: an ordinary 2-rank fit. two: two Trainers one after the other,
// handed the program's one SubprocessLauncher: the second fits on the ranks
// the first started (each rank prints "rank R: steps A B"). held: rank 1 sends SIGTERM to rank 0 (its
// parent) and stops itself (SIGSTOP) in its third step, so rank 0 waits in a
// collective for a rank that never comes. Rank 0 then checks what the run
// left: how fit ended and how long it took after the signal, that its own
// SIGTERM handler is installed again (it raises SIGTERM and counts), and
// that its child is still running (not reaped by anyone). It prints one
// line "host: ..." and exits 0 when all hold, 1 otherwise.
#include "../support/tiny_modules.hpp"

#include <fulgur/trainer/connectors/stop_signal_error.hpp>
#include <fulgur/strategies/launchers/subprocess_launcher.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

extern char** environ;

// One of the programs in a multi-call binary (started through bin/host_probe).
namespace host_probe {

namespace {

std::atomic<int> g_host_sigterms{0};
void host_handler(int) { g_host_sigterms.fetch_add(1); }

/// Rank 1 in held mode: in its third step, tells rank 0 and stops itself.
class StoppingModule : public fulgur::testing::RecordingModule {
 public:
  explicit StoppingModule(bool hold) : hold_(hold) {}
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t batch_idx) override {
    if (hold_ && trainer()->global_rank() == 1 && trainer()->global_step() == 2) {
      ::kill(::getppid(), SIGTERM);
      std::raise(SIGSTOP);
    }
    return RecordingModule::training_step(batch, batch_idx);
  }

 private:
  bool hold_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "finish" && mode != "held" && mode != "two") {
    std::cerr << "usage: host_probe finish|held|two DIR\n";
    return 2;
  }
  const bool held = std::string(argv[1]) == "held";
  const bool host = std::getenv("FULGUR_LAUNCHED") == nullptr;  // rank 1 runs this main() too
  pid_t child = -1;
  if (host) {
    struct sigaction own {};
    own.sa_handler = host_handler;
    sigemptyset(&own.sa_mask);
    ::sigaction(SIGTERM, &own, nullptr);
    const char* sleep_argv[] = {"sleep", "120", nullptr};
    if (::posix_spawnp(&child, "sleep", nullptr, nullptr, const_cast<char**>(sleep_argv), environ) != 0) return 1;
  }

  fulgur::TrainerOptions options = fulgur::testing::quiet_options(argv[2]);
  options.logger(false).enable_checkpointing(false).max_epochs(2).devices(2).strategy(fulgur::StrategyKind::DDP);
  options.process_group_timeout(300);  // far beyond the bound: only the stop may end the wait
  if (mode == "two") {
    const auto launcher = std::make_shared<fulgur::SubprocessLauncher>();
    fulgur::testing::RegressionData data(8, 0);
    int64_t steps[2] = {0, 0};
    int code = 0;
    for (int i = 0; i < 2; ++i) {
      fulgur::testing::RecordingModule model;
      fulgur::Trainer trainer(options.max_epochs(i + 1), {}, {}, fulgur::Platform::detect(), launcher);
      trainer.fit(model, data);
      steps[i] = trainer.global_step();
      if (i == 1) {
        std::cout << "rank " << trainer.global_rank() << ": steps " << steps[0] << " " << steps[1] << std::endl;
        code = trainer.exit_code();
      }
    }
    if (host) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
    return code;
  }
  std::string outcome = "returned";
  double seconds = 0;
  int exit_code = 0;
  {
    StoppingModule model(held);
    fulgur::testing::RegressionData data(8, 0);
    fulgur::Trainer trainer(options);
    const auto start = std::chrono::steady_clock::now();
    try {
      trainer.fit(model, data);
    } catch (const fulgur::StopSignalError& e) {
      outcome = "threw StopSignalError(" + std::to_string(e.signal()) + ")";
    } catch (const std::exception& e) {
      outcome = std::string("threw: ") + e.what();
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    exit_code = trainer.exit_code();
  }
  if (!host) return exit_code;

  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  const bool handler_back = now.sa_handler == host_handler;
  const int before = g_host_sigterms.load();
  std::raise(SIGTERM);
  const bool handler_runs = g_host_sigterms.load() == before + 1;
  int status = 0;
  const bool child_alive = ::waitpid(child, &status, WNOHANG) == 0;
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  std::cout << "host: fit " << outcome << " exit_code=" << exit_code << " seconds=" << static_cast<int>(seconds)
            << " handler_back=" << handler_back << " handler_runs=" << handler_runs << " child_alive=" << child_alive
            << " sigterms_before=" << before << std::endl;
  return handler_back && handler_runs && child_alive ? 0 : 1;
}

}  // namespace host_probe
