// A program that embeds fulgur and keeps its process: its own SIGTERM
// handler and its own child process (a `sleep`) around a 2-rank fit.
//
//   host_probe finish|held|two DIR
//   host_probe guest-gloo|guest-mpi DIR      (every rank, under mpirun)
//   host_probe late-cuda DIR
//
// guest-*: a host with its own SIGTERM and SIGINT handlers (SIGUSR1 and
// SIGPIPE at their defaults) and one LibTorch thread runs, on 2 ranks over
// Gloo (a FileStore per group in DIR) or MPI: a Trainer (constructed with
// no Platform, fit, test), an inline OnlineTrainer with a checkpoint_dir
// (constructed, between steps, a SIGINT between steps), a Fabric, and two
// runs on two threads (a 2-rank fit, and a lone fit that begins during it
// and ends after it), the first Trainer alive throughout (MPI stays
// initialised). After each, the four dispositions, the thread count
// and the CUDA modules in /proc/self/maps must be what they were before:
// every difference prints "guest rank R: WHEN: WHAT" and the rank exits 1.

// late-cuda: torch::manual_seed before a Trainer with accelerator gpu, the
// mistake that hides the GPUs from LibTorch for the whole process; prints
// the Trainer's error ("late-cuda: ...") and exits 0 (scripts/gpu_check.sh
// wants the one that names the cause on a GPU, "no CUDA device" without).
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

#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>
#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/launchers/subprocess_launcher.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <ATen/Parallel.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

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
    if (hold_ && trainer()->global_rank() == 1 && trainer()->state().global_step() == 2) {
      ::kill(::getppid(), SIGTERM);
      std::raise(SIGSTOP);
    }
    return RecordingModule::training_step(batch, batch_idx);
  }

 private:
  bool hold_;
};

std::atomic<int> g_host_sigints{0};
void host_int_handler(int) { g_host_sigints.fetch_add(1); }

/// What a host can see of its process, and what fulgur must give back.
struct Seen {
  std::string dispositions[4];  // SIGPIPE, SIGTERM, SIGINT, SIGUSR1
  int threads = 0;
  std::set<std::string> cuda_modules;  // mapped files that are CUDA's or fulgur's CUDA module

  static std::string disposition(int signal) {
    struct sigaction now {};
    ::sigaction(signal, nullptr, &now);
    if ((now.sa_flags & SA_SIGINFO) != 0) return "a fulgur-or-other SA_SIGINFO handler";
    if (now.sa_handler == SIG_DFL) return "SIG_DFL";
    if (now.sa_handler == SIG_IGN) return "SIG_IGN";
    if (now.sa_handler == host_handler) return "the host's SIGTERM handler";
    if (now.sa_handler == host_int_handler) return "the host's SIGINT handler";
    return "another handler";
  }
  static Seen now() {
    Seen seen;
    const int signals[4] = {SIGPIPE, SIGTERM, SIGINT, SIGUSR1};
    for (int i = 0; i < 4; ++i) seen.dispositions[i] = disposition(signals[i]);
    seen.threads = at::get_num_threads();
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      const auto slash = line.find('/');
      if (slash == std::string::npos) continue;
      const std::string path = line.substr(slash);
      if (path.find("libfulgur_cuda") != std::string::npos || path.find("libcuda.so") != std::string::npos ||
          path.find("libtorch_cuda") != std::string::npos) {
        seen.cuda_modules.insert(path);
      }
    }
    return seen;
  }
};

/// Compares the process with how the host left it; prints each difference.
class GuestChecks {
 public:
  explicit GuestChecks(int64_t rank) : rank_(rank), before_(Seen::now()) {}
  void expect_unchanged(const std::string& when) {
    const Seen now = Seen::now();
    const char* names[4] = {"SIGPIPE", "SIGTERM", "SIGINT", "SIGUSR1"};
    for (int i = 0; i < 4; ++i) {
      expect(now.dispositions[i] == before_.dispositions[i], when,
             std::string(names[i]) + " is " + now.dispositions[i] + ", was " + before_.dispositions[i]);
    }
    expect(now.threads == before_.threads, when,
           "LibTorch's thread count is " + std::to_string(now.threads) + ", was " + std::to_string(before_.threads));
    for (const auto& path : now.cuda_modules) {
      expect(before_.cuda_modules.count(path) > 0, when, "no run needed CUDA, yet " + path + " is mapped");
    }
  }
  void expect(bool holds, const std::string& when, const std::string& what) {
    ++checks_;
    if (holds) return;
    ++failed_;
    std::cout << "guest rank " << rank_ << ": " << when << ": " << what << std::endl;
  }
  int finish() const {
    std::cout << "guest rank " << rank_ << ": " << checks_ << " checks, " << failed_ << " failed" << std::endl;
    return failed_ == 0 ? 0 : 1;
  }

 private:
  int64_t rank_;
  Seen before_;
  int checks_ = 0;
  int failed_ = 0;
};

/// Set by the two-thread case: a run's training_step waits for the other run.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable changed;
  bool lone_running = false;
  bool ranks_ended = false;
  bool wait_for(const bool& flag) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(120), [&] { return flag; });
  }
  void set(bool& flag) {
    {
      const std::lock_guard lock(mutex);
      flag = true;
    }
    changed.notify_all();
  }
};

/// A RecordingModule whose first training step runs `at_first_step` once.
class SteppingModule : public fulgur::testing::RecordingModule {
 public:
  explicit SteppingModule(std::function<void()> at_first_step) : at_first_step_(std::move(at_first_step)) {}
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t batch_idx) override {
    if (at_first_step_) std::exchange(at_first_step_, nullptr)();
    return RecordingModule::training_step(batch, batch_idx);
  }

 private:
  std::function<void()> at_first_step_;
};

int guest(const std::string& backend, const std::filesystem::path& dir) {
  // The host's own process: handlers for SIGTERM and SIGINT, one LibTorch thread.
  struct sigaction own {};
  own.sa_handler = host_handler;
  sigemptyset(&own.sa_mask);
  ::sigaction(SIGTERM, &own, nullptr);
  own.sa_handler = host_int_handler;
  ::sigaction(SIGINT, &own, nullptr);
  at::set_num_threads(1);
  (void)torch::ones({8, 4}).matmul(torch::ones({4, 1})).sum().item<float>();  // LibTorch's own lazy start

  // Each multi-rank object meets in a FileStore of its own (Gloo's keys are per group).
  int groups = 0;
  const auto next_store = [&] { return (dir / ("store-" + std::to_string(++groups))).string(); };
  const auto platform_for = [&](const fulgur::TrainerOptions& options) {
    const std::string store = next_store();
    const fulgur::EnvLookup process = fulgur::process_environment();
    return fulgur::Platform::detect_for(options, [process, store](const std::string& name) {
      return name == "FULGUR_FILE_STORE" ? std::optional<std::string>(store) : process(name);
    });
  };
  fulgur::TrainerOptions options = fulgur::testing::quiet_options((dir / "runs").string());
  options.logger(false).enable_checkpointing(false).max_epochs(1).devices(2).strategy(fulgur::StrategyKind::DDP);
  options.accelerator(fulgur::AcceleratorKind::Cpu).process_group_timeout(120);
  options.process_group_backend(backend == "mpi" ? fulgur::ProcessGroupBackend::Mpi : fulgur::ProcessGroupBackend::Gloo);
  const int64_t rank = std::stoll(std::getenv("OMPI_COMM_WORLD_RANK") ? std::getenv("OMPI_COMM_WORLD_RANK") : "0");
  GuestChecks checks(rank);
  fulgur::testing::RegressionData data(4, 1);

  // No Platform given: the first group's store comes from FULGUR_FILE_STORE
  // (the test sets it). It lives to the end, as a host's Trainer would: with
  // MPI its group keeps MPI initialised for the runs after it (fulgur
  // finalises MPI when the last group of its runs ends).
  ++groups;
  auto first = std::make_unique<fulgur::Trainer>(options);
  checks.expect_unchanged("after constructing a Trainer");
  fulgur::testing::RecordingModule first_model;
  first->fit(first_model, data);
  checks.expect_unchanged("after fit, the Trainer alive");
  first->test(first_model, data);
  checks.expect_unchanged("after test, the Trainer alive");

  {
    fulgur::OnlineOptions online;
    online.trainer = options;
    online.checkpoint_dir = dir / ("online-" + std::to_string(rank));
    fulgur::OnlineTrainer trainer([] { return std::make_shared<fulgur::testing::RecordingModule>(); }, online, {},
                                  platform_for(options));
    checks.expect_unchanged("after constructing an inline OnlineTrainer");
    const torch::Tensor x = torch::ones({4, 4});
    const torch::Tensor y = torch::ones({4});
    trainer.train_step(x, y);
    checks.expect_unchanged("between inline steps");
    // The host's Ctrl-C while its own simulation computes: the host's alone.
    const int sigints = g_host_sigints.load();
    std::raise(SIGINT);
    checks.expect(g_host_sigints.load() == sigints + 1, "a SIGINT between inline steps", "the host's handler was not called");
    trainer.train_step(x, y);
    checks.expect(trainer.stop_signal() == 0, "a SIGINT between inline steps",
                  "the online trainer took it as a stop request (stop_signal " + std::to_string(trainer.stop_signal()) +
                      ")");
    checks.expect_unchanged("after the second inline step");
  }
  checks.expect_unchanged("after the OnlineTrainer ended");

  {
    fulgur::testing::RecordingModule model;  // outlives the Fabric
    fulgur::Fabric fabric(options, {}, platform_for(options));
    fabric.setup(model);
    fabric.training_step(fulgur::Batch{torch::ones({4, 4}), torch::ones({4}), {}});
  }
  checks.expect_unchanged("after a Fabric ended");

  {
    // Two runs on two threads: the 2-rank fit begins first and ends first,
    // while a lone fit (this process alone, two LibTorch threads) still runs.
    Rendezvous meet;
    fulgur::Platform lone_platform;
    lone_platform.cpus_per_task = 2;
    fulgur::Trainer ranks(options, {}, {}, platform_for(options));
    fulgur::Trainer lone(fulgur::testing::quiet_options((dir / ("lone-" + std::to_string(rank))).string())
                             .logger(false)
                             .enable_checkpointing(false)
                             .max_epochs(1)
                             .accelerator(fulgur::AcceleratorKind::Cpu),
                         {}, {}, lone_platform);
    std::string in_lone_after_ranks;
    std::thread lone_thread([&] {
      SteppingModule model([&] {
        meet.set(meet.lone_running);
        meet.wait_for(meet.ranks_ended);
        in_lone_after_ranks = Seen::disposition(SIGPIPE);
      });
      fulgur::testing::RegressionData lone_data(4, 1);
      lone.fit(model, lone_data);
    });
    SteppingModule model([&] { meet.wait_for(meet.lone_running); });
    ranks.fit(model, data);
    meet.set(meet.ranks_ended);
    lone_thread.join();
    checks.expect(in_lone_after_ranks == "SIG_IGN", "the lone run after the 2-rank run ended",
                  "SIGPIPE is " + in_lone_after_ranks + ": the first run to end gave back what the other still holds");
    checks.expect_unchanged("after two runs on two threads, both Trainers alive");
  }
  first.reset();
  checks.expect_unchanged("after everything ended");
  return checks.finish();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode == "guest-gloo" || mode == "guest-mpi") {
    try {
      return guest(mode.substr(6), argv[2]);
    } catch (const std::exception& e) {
      std::cout << "guest: threw: " << e.what() << std::endl;
      return 1;
    }
  }
  if (mode == "late-cuda") {
    torch::manual_seed(0);  // asks LibTorch about CUDA before fulgur loaded its module
    try {
      fulgur::Trainer trainer(fulgur::testing::quiet_options(argv[2]).accelerator(fulgur::AcceleratorKind::Cuda));
      std::cout << "late-cuda: the Trainer was made: LibTorch sees " << torch::cuda::device_count() << " GPU(s)\n";
      return 1;
    } catch (const std::exception& e) {
      std::cout << "late-cuda: " << e.what() << std::endl;
      return 0;
    }
  }
  if (mode != "finish" && mode != "held" && mode != "two") {
    std::cerr << "usage: host_probe finish|held|two|guest-gloo|guest-mpi|late-cuda DIR\n";
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
      fulgur::Trainer trainer(options.max_epochs(i + 1), {}, {}, std::nullopt, launcher);
      trainer.fit(model, data);
      steps[i] = trainer.state().global_step();
      // Rank 0 keeps the first Trainer's group a second longer, so rank 1
      // begins the second Trainer while the first group still lives.
      if (i == 0 && host) std::this_thread::sleep_for(std::chrono::seconds(1));
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
