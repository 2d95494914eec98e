// fulgur as a guest in a host program's process: a host with its own
// SIGTERM and SIGINT handlers and one LibTorch thread finds, after a
// Trainer is constructed, after fit returns, after two Trainers end
// first-made-first and after a Trainer whose set-up threw, its handlers,
// the SIGUSR1 and SIGPIPE defaults, its thread count, LibTorch's flags and
// its thread population exactly as it left them. During a run fulgur's
// handlers are in place, and a stop signal outside fit ends the run there.
// The same on 2 ranks (Gloo and MPI, under mpirun), between inline online
// steps and for two runs on two threads: host_probe guest-* (below).
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"
#include "support/thread_snapshot.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/core/ignored_signal.hpp>
#include <fulgur/core/stop_signals.hpp>
#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/strategies/environments/local_environment.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>
#include <fulgur/trainer/run_settings.hpp>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace guest_test {

using namespace fulgur;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

std::atomic<int> g_host_terms{0};
std::atomic<int> g_host_ints{0};
void host_term(int) { g_host_terms.fetch_add(1); }
void host_int(int) { g_host_ints.fetch_add(1); }

using Handler = void (*)(int);

Handler handler_of(int signal) {
  struct sigaction current {};
  ::sigaction(signal, nullptr, &current);
  return current.sa_handler;
}

bool same(Handler a, Handler b) { return a == b; }

/// What a host program can see of its process.
struct HostState {
  Handler term, intr, usr1, pipe;
  int threads;
  bool benchmark, deterministic;
  fulgur::testing::ThreadSnapshot population;

  static HostState read() {
    return {handler_of(SIGTERM), handler_of(SIGINT), handler_of(SIGUSR1), handler_of(SIGPIPE),
            at::get_num_threads(), at::globalContext().benchmarkCuDNN(),
            at::globalContext().deterministicAlgorithms(), {}};
  }
  /// `threads_too`: no thread started since `other` is left (not while a
  /// process group lives: Gloo's and the store's threads are the group's).
  void check_equal(const HostState& other, const char* when, bool threads_too = true) const {
    CAPTURE(std::string(when));
    CHECK(same(term, other.term));
    CHECK(same(intr, other.intr));
    CHECK(same(usr1, other.usr1));
    CHECK(same(pipe, other.pipe));
    CHECK(threads == other.threads);
    CHECK(benchmark == other.benchmark);
    CHECK(deterministic == other.deterministic);
    if (threads_too) CHECK(other.population.new_threads() == 0);
  }
};

/// The host's own set-up, undone at the end of the test case.
class Host {
 public:
  Host() : threads_(at::get_num_threads()) {
    struct sigaction term {};
    term.sa_handler = host_term;
    sigemptyset(&term.sa_mask);
    ::sigaction(SIGTERM, &term, &old_term_);
    struct sigaction intr = term;
    intr.sa_handler = host_int;
    ::sigaction(SIGINT, &intr, &old_int_);
    at::set_num_threads(1);
  }
  ~Host() {
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
    at::set_num_threads(threads_);
  }

 private:
  int threads_;
  struct sigaction old_term_ {};
  struct sigaction old_int_ {};
};

/// Records, inside the run, whether fulgur's handlers and settings are in place.
class Observing : public fulgur::testing::RecordingModule {
 public:
  torch::Tensor training_step(const Batch& batch, int64_t batch_idx) override {
    term_in_run = handler_of(SIGTERM);
    threads_in_run = at::get_num_threads();
    benchmark_in_run = at::globalContext().benchmarkCuDNN();
    return RecordingModule::training_step(batch, batch_idx);
  }
  Handler term_in_run = nullptr;
  int threads_in_run = 0;
  bool benchmark_in_run = false;
};

/// Sets FULGUR_SIGNAL_GRACE_S for one scope.
class GraceEnv {
 public:
  explicit GraceEnv(const char* value) {
    if (const char* old = std::getenv("FULGUR_SIGNAL_GRACE_S")) old_ = old;
    ::setenv("FULGUR_SIGNAL_GRACE_S", value, 1);
  }
  ~GraceEnv() {
    if (old_) {
      ::setenv("FULGUR_SIGNAL_GRACE_S", old_->c_str(), 1);
    } else {
      ::unsetenv("FULGUR_SIGNAL_GRACE_S");
    }
  }

 private:
  std::optional<std::string> old_;
};

TrainerOptions host_options(const TempDir& dir) {
  // The defaults a host would use (progress bar, summary, CSV logger, last.ckpt), CPU.
  return TrainerOptions().default_root_dir(dir.path().string()).max_epochs(2).accelerator(AcceleratorKind::Cpu);
}

}  // namespace

TEST_CASE("guest: construction, fit, two Trainers ended first-made-first and a failed set-up change nothing") {
  const Host host;
  // LibTorch's own lazily started parts (the intra-op pool's first use) are the host's to start.
  {
    RegressionData warm(1, 0);
    (void)torch::ones({8, 4}).matmul(torch::ones({4, 1})).sum().item<float>();
  }
  const HostState before = HostState::read();
  TempDir dir("guest");
  {
    Trainer trainer(host_options(dir).num_sanity_val_steps(0));
    HostState::read().check_equal(before, "after constructing a Trainer");
    Observing model;
    RegressionData data(4, 2);
    trainer.fit(model, data);
    CHECK(trainer.state().global_step() == 8);
    // During fit the Trainer's handler records the signals.
    CHECK(!same(model.term_in_run, host_term));
    CHECK(model.threads_in_run == 1);  // the host's count: the options ask for none
    HostState::read().check_equal(before, "after fit returned");
    trainer.test(model, data);
    HostState::read().check_equal(before, "after test returned");
  }
  {
    // Checkpoints written by a background thread: the thread ends with the run.
    Trainer trainer(host_options(dir).max_epochs(2).async_checkpoint(true));
    fulgur::testing::RecordingModule model;
    RegressionData data(2, 1);
    trainer.fit(model, data);
    HostState::read().check_equal(before, "after a fit with async_checkpoint returned");
  }
  HostState::read().check_equal(before, "after the Trainer ended");

  {
    auto first = std::make_unique<Trainer>(host_options(dir).max_epochs(1));
    auto second = std::make_unique<Trainer>(host_options(dir).max_epochs(1));
    fulgur::testing::RecordingModule a;
    fulgur::testing::RecordingModule b;
    RegressionData data(2, 1);
    first->fit(a, data);
    second->fit(b, data);
    first.reset();
    HostState::read().check_equal(before, "after the first of two Trainers ended");
    second.reset();
  }
  HostState::read().check_equal(before, "after two Trainers ended first-made-first");

  {
    const GraceEnv bad("soon");
    CHECK_THROWS_WITH_AS(Trainer(host_options(dir)),
                         "[SignalConnector] FULGUR_SIGNAL_GRACE_S='soon' is not a positive number of seconds",
                         std::invalid_argument);
  }
  HostState::read().check_equal(before, "after a Trainer whose set-up threw");
  CHECK(g_host_terms.load() == 0);
  CHECK(g_host_ints.load() == 0);
}

TEST_CASE("guest: an OnlineTrainer and a Fabric change nothing when constructed; inline steps keep the thread count") {
  const Host host;
  (void)torch::ones({8, 4}).matmul(torch::ones({4, 1})).sum().item<float>();
  const HostState before = HostState::read();
  TempDir dir("guest-online");
  {
    OnlineOptions options;
    options.trainer = host_options(dir).logger(false);
    options.num_threads = 2;
    options.checkpoint_dir = dir / "online";
    OnlineTrainer online([] { return std::make_shared<fulgur::testing::RecordingModule>(); }, options);
    HostState::read().check_equal(before, "after constructing an OnlineTrainer");
    online.train_step(torch::ones({8, 4}), torch::ones({8}));
    // Each inline step is a run of its own: between steps the process is the host's.
    HostState::read().check_equal(before, "between inline steps");
    const int host_ints = g_host_ints.load();
    std::raise(SIGINT);  // the host's Ctrl-C while its own simulation computes
    CHECK(g_host_ints.load() == host_ints + 1);
    online.train_step(torch::ones({8, 4}), torch::ones({8}));
    CHECK(online.stop_signal() == 0);  // not a stop request: no step held the handlers when it came
    HostState::read().check_equal(before, "after the second inline step");
  }
  CHECK(same(handler_of(SIGTERM), host_term));
  {
    Fabric fabric(host_options(dir).logger(false));
    HostState::read().check_equal(before, "after constructing a Fabric");
  }
  HostState::read().check_equal(before, "after the OnlineTrainer and the Fabric ended");
}

TEST_CASE("guest: a 1-rank ddp run holds SIGPIPE ignored during the run only; two runs on two threads give it back last") {
  const Host host;
  (void)torch::ones({8, 4}).matmul(torch::ones({4, 1})).sum().item<float>();
  const HostState before = HostState::read();
  TempDir dir("guest-sigpipe");
  // A process group of one (ddp, devices 1) on a store port nobody else uses.
  const auto platform_with_group = [] {
    const int port = fulgur::testing::free_port();
    Platform platform;
    platform.environment = std::make_shared<LocalEnvironment>([port](const std::string& name) {
      return name == "MASTER_PORT" ? std::optional<std::string>(std::to_string(port)) : std::nullopt;
    });
    return platform;
  };
  class SeesSigpipe : public fulgur::testing::RecordingModule {
   public:
    torch::Tensor training_step(const Batch& batch, int64_t batch_idx) override {
      pipe_in_run = handler_of(SIGPIPE);
      return RecordingModule::training_step(batch, batch_idx);
    }
    Handler pipe_in_run = SIG_DFL;
  };
  Trainer trainer(host_options(dir).logger(false).max_epochs(1).strategy(StrategyKind::DDP).devices(1), {}, {},
                  platform_with_group());
  SeesSigpipe model;
  RegressionData data(2, 1);
  trainer.fit(model, data);
  CHECK(same(model.pipe_in_run, SIG_IGN));  // a write to a dead peer fails with EPIPE during the run
  HostState::read().check_equal(before, "after a ddp fit, its process group alive", /*threads_too=*/false);

  // Two runs on two threads, the first to begin ending first: the second still holds SIGPIPE.
  std::mutex mutex;
  std::condition_variable changed;
  bool second_running = false;
  bool first_ended = false;
  Handler in_second_after_first = SIG_DFL;
  class AtFirstStep : public fulgur::testing::RecordingModule {
   public:
    explicit AtFirstStep(std::function<void()> at_first) : at_first_(std::move(at_first)) {}
    torch::Tensor training_step(const Batch& batch, int64_t batch_idx) override {
      if (at_first_) std::exchange(at_first_, nullptr)();
      return RecordingModule::training_step(batch, batch_idx);
    }

   private:
    std::function<void()> at_first_;
  };
  bool met = false;
  const auto wait_for = [&](const bool& flag) {
    std::unique_lock lock(mutex);
    met = changed.wait_for(lock, std::chrono::seconds(120), [&] { return flag; });
  };
  const auto set = [&](bool& flag) {
    {
      const std::lock_guard lock(mutex);
      flag = true;
    }
    changed.notify_all();
  };
  Trainer second(host_options(dir).logger(false).max_epochs(1), {}, {}, Platform{});
  std::string second_error;
  std::thread second_thread([&] {
    AtFirstStep model([&] {
      set(second_running);
      std::unique_lock lock(mutex);
      changed.wait_for(lock, std::chrono::seconds(120), [&] { return first_ended; });
      in_second_after_first = handler_of(SIGPIPE);
    });
    RegressionData data(2, 1);
    try {
      second.fit(model, data);
    } catch (const std::exception& e) {
      second_error = e.what();
      set(second_running);  // never leave the first run waiting
    }
  });
  std::string error;
  try {
    Trainer first(host_options(dir).logger(false).max_epochs(1).strategy(StrategyKind::DDP).devices(1), {}, {},
                  platform_with_group());
    AtFirstStep model([&] { wait_for(second_running); });
    RegressionData data(2, 1);
    first.fit(model, data);
  } catch (const std::exception& e) {
    error = e.what();  // the second thread is joined first
  }
  set(first_ended);
  second_thread.join();
  CHECK(error.empty());
  CHECK(second_error.empty());
  CHECK(met);  // the two runs overlapped
  CHECK(same(in_second_after_first, SIG_IGN));
  HostState::read().check_equal(before, "after two runs on two threads ended first-begun-first", /*threads_too=*/false);
}

TEST_CASE("guest: the options' threads, deterministic and cuDNN benchmark hold during the run only") {
  const Host host;
  const HostState before = HostState::read();
  TempDir dir("guest-settings");
  Platform platform;
  platform.cpus_per_task = 2;  // SLURM_CPUS_PER_TASK: two compute threads for the run
  Trainer trainer(host_options(dir).max_epochs(1).benchmark(true).deterministic(true).logger(false), {}, {}, platform);
  HostState::read().check_equal(before, "after constructing");
  Observing model;
  RegressionData data(2, 0);
  trainer.fit(model, data);
  CHECK(model.threads_in_run == 2);
  CHECK(model.benchmark_in_run);
  const HostState after = HostState::read();
  // The pool threads LibTorch started for the run's two threads are LibTorch's; the settings are back.
  CHECK(after.threads == before.threads);
  CHECK(after.benchmark == before.benchmark);
  CHECK(after.deterministic == before.deterministic);
  CHECK(same(after.term, host_term));
}

TEST_CASE("guest: SIGTERM during test() ends that run with StopSignalError; the host's handler heard it once and is back") {
  const Host host;
  TempDir dir("guest-stop");
  class TermInTest : public fulgur::testing::RecordingModule {
   public:
    void test_step(const Batch& batch, int64_t batch_idx) override {
      if (batch_idx == 0) std::raise(SIGTERM);
      RecordingModule::test_step(batch, batch_idx);
    }
  } model;
  RegressionData data(2, 3);
  Trainer trainer(host_options(dir).logger(false));
  const int host_terms = g_host_terms.load();
  CHECK_THROWS_AS(trainer.test(model, data), StopSignalError);
  CHECK(model.count("test_step") == 1);  // stopped at the next batch
  CHECK(g_host_terms.load() == host_terms + 1);  // chained when it came, not raised again after
  CHECK(same(handler_of(SIGTERM), host_term));
}

TEST_CASE("StopSignals: holders in any order put the program's handlers back; the program's handler hears each signal once") {
  const Host host;
  const int host_terms = g_host_terms.load();
  auto first = std::make_unique<StopSignals>();
  CHECK(first->first());
  auto second = std::make_unique<StopSignals>();
  CHECK(!second->first());
  CHECK(!same(handler_of(SIGTERM), host_term));
  std::raise(SIGUSR1);  // recorded, not the default action (which would end the process)
  CHECK(StopSignals::received() == SIGUSR1);
  std::raise(SIGTERM);
  CHECK(g_host_terms.load() == host_terms + 1);  // the host's own handler, chained
  std::raise(SIGUSR1);
  CHECK(StopSignals::received() == SIGTERM);  // the strongest stays
  CHECK(StopSignals::unacted() == 1);
  first.reset();  // the first made ends first: the handlers stay until the last
  CHECK(!same(handler_of(SIGTERM), host_term));
  second.reset();
  CHECK(same(handler_of(SIGTERM), host_term));
  CHECK(same(handler_of(SIGUSR1), SIG_DFL));
  CHECK(g_host_terms.load() == host_terms + 1);  // heard when it came: not raised again
  {
    const StopSignals held;
    std::raise(SIGTERM);
    StopSignals::mark_acted();
  }
  CHECK(g_host_terms.load() == host_terms + 2);
}

TEST_CASE("StopSignals: a signal the program ignores is a stop request while held, and ignored again after") {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old {};
  ::sigaction(SIGINT, &ignore, &old);
  {
    const StopSignals held;
    CHECK(!same(handler_of(SIGINT), SIG_IGN));
    std::raise(SIGINT);
    CHECK(StopSignals::received() == SIGINT);
    CHECK(StopSignals::unacted() == 1);
  }  // unacted, yet the program ignores it: raised again into SIG_IGN, nothing happens
  CHECK(same(handler_of(SIGINT), SIG_IGN));
  ::sigaction(SIGINT, &old, nullptr);
}

TEST_CASE("RunSettings: overlapping runs ended in the order they began put the program's settings back") {
  const int program = at::get_num_threads();
  const bool program_deterministic = at::globalContext().deterministicAlgorithms();
  auto first = std::make_unique<RunSettings>(RunSettings::Wanted{program + 1, !program_deterministic, std::nullopt});
  auto second = std::make_unique<RunSettings>(RunSettings::Wanted{program + 2, std::nullopt, std::nullopt});
  CHECK(at::get_num_threads() == program + 2);  // the latest run's
  first.reset();  // the first run ends while the second still runs: its settings stay
  CHECK(at::get_num_threads() == program + 2);
  CHECK(at::globalContext().deterministicAlgorithms() == !program_deterministic);
  second.reset();
  CHECK(at::get_num_threads() == program);
  CHECK(at::globalContext().deterministicAlgorithms() == program_deterministic);
}

TEST_CASE("IgnoredSignal: ignores a default signal while held, leaves a program's own handler alone") {
  for (const int signal : {SIGPIPE, SIGUSR1}) {
    INFO(signal);
    REQUIRE(same(handler_of(signal), SIG_DFL));
    {
      auto a = std::make_unique<IgnoredSignal>(signal);
      auto b = std::make_unique<IgnoredSignal>(signal);
      CHECK(same(handler_of(signal), SIG_IGN));
      a.reset();
      CHECK(same(handler_of(signal), SIG_IGN));
      std::raise(signal);  // ignored: the test goes on
    }
    CHECK(same(handler_of(signal), SIG_DFL));
    struct sigaction own {};
    own.sa_handler = host_term;
    sigemptyset(&own.sa_mask);
    struct sigaction old {};
    ::sigaction(signal, &own, &old);
    {
      const IgnoredSignal held(signal);
      CHECK(same(handler_of(signal), host_term));
    }
    CHECK(same(handler_of(signal), host_term));
    ::sigaction(signal, &old, nullptr);
  }
  CHECK_THROWS_WITH_AS(IgnoredSignal(SIGKILL), "[IgnoredSignal] signal 9 cannot be ignored", std::invalid_argument);
}

namespace {

/// A folder whose libcuda.so.1 is CUDA's stub driver, for a machine with the
/// CUDA toolkit but no GPU: there fulgur's CUDA module loads as on a GPU
/// machine (and then sees no device), so a run that loads it needlessly
/// shows in /proc/self/maps. Empty with a real driver, or without a stub.
std::string stub_driver_dir(const TempDir& dir) {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) != nullptr) return "";
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    return "";  // a real driver: the module loads for real
  }
  std::vector<std::string> roots{"/usr/local/cuda"};
  if (const char* home = std::getenv("CUDA_HOME")) roots.insert(roots.begin(), home);
  for (const auto& root : roots) {
    for (const char* sub : {"/lib64/stubs/libcuda.so", "/lib/stubs/libcuda.so", "/targets/x86_64-linux/lib/stubs/libcuda.so"}) {
      if (!std::filesystem::exists(root + sub)) continue;
      const std::filesystem::path stubs = dir / "stub-driver";
      std::filesystem::create_directories(stubs);
      std::filesystem::create_symlink(root + sub, stubs / "libcuda.so.1");
      return stubs.string();
    }
  }
  return "";
}

}  // namespace

TEST_CASE("guest on 2 ranks (Gloo, MPI under mpirun): a Trainer, inline online steps, a Fabric and two runs on two threads give everything back") {
  // tests/probes/host_probe.cpp, mode guest-*: each rank checks its SIGPIPE,
  // SIGTERM, SIGINT and SIGUSR1 dispositions, LibTorch's thread count and
  // the CUDA modules in /proc/self/maps after every run, between inline
  // steps and after a SIGINT between them (the host's alone).
  for (const std::string backend : {"gloo", "mpi"}) {
    CAPTURE(backend);
    TempDir dir("guest-" + backend);
    const std::string stubs = stub_driver_dir(dir);
    if (stubs.empty()) MESSAGE("no CUDA stub driver found: the maps check sees a real driver or none");
    const std::string command =
        "env -u MASTER_ADDR -u MASTER_PORT mpirun --allow-run-as-root --oversubscribe -np 2 -x FULGUR_FILE_STORE=" +
        (dir / "store-1").string() + (stubs.empty() ? "" : " -x LD_LIBRARY_PATH=" + stubs + ":${LD_LIBRARY_PATH}") +
        " " + fulgur::testing::probe_program("host_probe") + " guest-" + backend + " " + dir.path().string();
    const auto result = fulgur::testing::run_command(command, 300);
    INFO(command);
    INFO(result.output);
    CHECK(result.exit_code == 0);
    // 10 comparisons of 5 items (4 dispositions, the thread count; a CUDA module mapped adds one) and 3 more.
    CHECK(result.output.find("guest rank 0: 53 checks, 0 failed") != std::string::npos);
    CHECK(result.output.find("guest rank 1: 53 checks, 0 failed") != std::string::npos);
  }
}

}  // namespace guest_test
