// fulgur as a guest in a host program's process: a host with its own
// SIGTERM and SIGINT handlers and one LibTorch thread finds, after a
// Trainer is constructed, after fit returns, after two Trainers end
// first-made-first and after a Trainer whose set-up threw, its handlers,
// the SIGUSR1 and SIGPIPE defaults, its thread count, LibTorch's flags and
// its thread population exactly as it left them. During a run fulgur's
// handlers are in place, and a stop signal outside fit ends the run there.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/core/ignored_signal.hpp>
#include <fulgur/core/stop_signals.hpp>
#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>
#include <fulgur/trainer/run_settings.hpp>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

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

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

/// What a host program can see of its process.
struct HostState {
  Handler term, intr, usr1, pipe;
  int threads;
  bool benchmark, deterministic;
  size_t population;

  static HostState read() {
    return {handler_of(SIGTERM), handler_of(SIGINT), handler_of(SIGUSR1), handler_of(SIGPIPE),
            at::get_num_threads(), at::globalContext().benchmarkCuDNN(),
            at::globalContext().deterministicAlgorithms(), thread_count()};
  }
  void check_equal(const HostState& other, const char* when) const {
    CAPTURE(when);
    CHECK(same(term, other.term));
    CHECK(same(intr, other.intr));
    CHECK(same(usr1, other.usr1));
    CHECK(same(pipe, other.pipe));
    CHECK(threads == other.threads);
    CHECK(benchmark == other.benchmark);
    CHECK(deterministic == other.deterministic);
    CHECK(population == other.population);
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
    CHECK(trainer.global_step() == 8);
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
    CHECK(at::get_num_threads() == before.threads);  // num_threads held during the step only
    // Inline training runs from its first step to its end: the signals are recorded meanwhile.
    CHECK(!same(handler_of(SIGTERM), host_term));
  }
  CHECK(same(handler_of(SIGTERM), host_term));
  {
    Fabric fabric(host_options(dir).logger(false));
    HostState::read().check_equal(before, "after constructing a Fabric");
  }
  HostState::read().check_equal(before, "after the OnlineTrainer and the Fabric ended");
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

}  // namespace guest_test
