#include <fulgur/strategies/local_launcher.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fulgur {
namespace {

using Clock = std::chrono::steady_clock;

// A signal handler can only reach state with static storage, so the latest
// SIGINT/SIGTERM is parked here for the wait loop to act on. Only one
// launch() may run at a time (g_launch_active) so the two never mix.
std::atomic<int> g_received_signal{0};
std::atomic<bool> g_launch_active{false};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");

extern "C" void record_signal(int sig) { g_received_signal.store(sig); }

// The variables launch() sets in every child; inherited values are dropped so
// a child never sees two copies.
constexpr const char* kLauncherVariables[] = {"RANK",       "WORLD_SIZE",  "LOCAL_RANK",  "LOCAL_WORLD_SIZE",
                                              "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "FULGUR_LAUNCHED"};

constexpr const char* kSelfExe = "/proc/self/exe";

std::vector<std::pair<std::string, std::string>> launcher_variables(const LocalLauncherOptions& o, int64_t local_rank,
                                                                    int64_t port) {
  return {{"RANK", std::to_string(o.node_rank() * o.nprocs() + local_rank)},
          {"WORLD_SIZE", std::to_string(o.nprocs() * o.num_nodes())},
          {"LOCAL_RANK", std::to_string(local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(o.nprocs())},
          {"GROUP_RANK", std::to_string(o.node_rank())},
          {"MASTER_ADDR", o.main_address()},
          {"MASTER_PORT", std::to_string(port)},
          {"FULGUR_LAUNCHED", "1"}};
}

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  return "unknown signal";
}

// Installs the SIGINT/SIGTERM recorders for the duration of launch() and puts
// the caller's dispositions back afterwards. SIGCHLD is set to default while
// launching because an ignored SIGCHLD makes the kernel reap children itself
// and waitpid() could no longer tell how a rank ended.
class SignalGuard {
 public:
  SignalGuard() {
    struct sigaction recorder {};
    recorder.sa_handler = record_signal;
    sigemptyset(&recorder.sa_mask);
    recorder.sa_flags = 0;  // no SA_RESTART: the wait loop's sleep should wake up
    ::sigaction(SIGINT, &recorder, &old_int_);
    ::sigaction(SIGTERM, &recorder, &old_term_);
    struct sigaction default_chld {};
    default_chld.sa_handler = SIG_DFL;
    sigemptyset(&default_chld.sa_mask);
    ::sigaction(SIGCHLD, &default_chld, &old_chld_);
  }
  ~SignalGuard() { restore(); }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  // Async-signal-safe: also called in a forked child before exec, so the
  // child starts with the dispositions the launching program itself had.
  void restore() const {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_chld_ {};
};

// Everything a child needs, built before fork(): between fork and exec only
// async-signal-safe calls are allowed (LibTorch may have threads running).
struct ChildSpec {
  int64_t rank = 0;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  std::string exec_error;  // written verbatim if execve fails
};

struct Child {
  int64_t rank = 0;
  pid_t pid = -1;
  bool running = false;
};

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Runs in the forked child; never returns.
[[noreturn]] void exec_child(const ChildSpec& spec, char* const* argv, pid_t supervisor, const SignalGuard* guard,
                             const sigset_t& original_mask) {
  if (guard != nullptr) guard->restore();
  // Die with the supervisor even if it is SIGKILLed. If it died before prctl
  // took effect, we were re-parented already and must not run unsupervised.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != supervisor) ::_exit(127);
  // A SIGTERM sent while we were blocked is delivered here, with the
  // restored disposition, so a stop request during start-up is not lost.
  ::pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
  ::execve(kSelfExe, argv, spec.envp.data());
  const int err = errno;
  write_all(STDERR_FILENO, spec.exec_error.data(), spec.exec_error.size());
  char digits[16];
  int n = 0;
  for (int e = err; n == 0 || e > 0; e /= 10) digits[n++] = static_cast<char>('0' + e % 10);
  for (int i = n - 1; i >= 0; --i) write_all(STDERR_FILENO, &digits[i], 1);
  write_all(STDERR_FILENO, ")\n", 2);
  ::_exit(127);
}

// Waits for the children, stops them all when one fails or a signal arrives,
// and produces launch()'s return code.
class Supervisor {
 public:
  Supervisor(std::vector<Child>& children, double grace_period_s)
      : children_(children), grace_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_period_s))) {}

  // Starts the teardown (used when start-up itself fails).
  void stop(int sig) {
    if (stopping_) return;
    stopping_ = true;
    deadline_ = Clock::now() + grace_;
    signal_running(sig);
  }

  // Reaps the children that already ended, reporting the first failure.
  void poll() { reap(); }
  bool found_failure() const { return result_ != 0; }

  int run() {
    // Checks for a signal before the first reap, so one that arrived before
    // any child started still yields 128 + signal.
    for (;;) {
      if (const int sig = g_received_signal.exchange(0); sig != 0) on_signal(sig);
      reap();
      if (count_running() == 0) break;
      if (stopping_ && !killed_ && Clock::now() >= deadline_) {
        signal_running(SIGKILL);
        killed_ = true;
      }
      // nanosleep, not std::this_thread::sleep_for: the latter resumes after
      // EINTR, and a signal should be acted on at once.
      struct timespec tick {0, 20'000'000};
      ::nanosleep(&tick, nullptr);
    }
    return result_;
  }

 private:
  void on_signal(int sig) {
    if (!stopping_) {
      std::fprintf(stderr, "[LocalLauncher] received %s, stopping %zu rank(s)\n", signal_name(sig).c_str(),
                   count_running());
      std::fflush(stderr);
      result_ = 128 + sig;
      stop(sig);
    } else if (!killed_) {
      // A second Ctrl-C means the user does not want to wait for the grace period.
      signal_running(SIGKILL);
      killed_ = true;
    }
  }

  void reap() {
    for (auto& child : children_) {
      if (!child.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(child.pid, &status, WNOHANG);
      if (r == 0) continue;
      if (r < 0) {
        if (errno == EINTR) continue;
        // ECHILD: reaped behind our back (someone else's waitpid(-1)); its
        // status is lost, so count it as failed rather than hang.
        child.running = false;
        on_exit(child, std::nullopt);
        continue;
      }
      child.running = false;
      on_exit(child, status);
    }
  }

  void on_exit(const Child& child, std::optional<int> status) {
    const bool failed = !status || WIFSIGNALED(*status) || (WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
    if (!failed || stopping_) return;  // only the first failure is reported
    if (!status) {
      std::fprintf(stderr, "[LocalLauncher] rank %lld ended with an unknown status (reaped elsewhere)\n",
                   static_cast<long long>(child.rank));
      result_ = 1;
    } else if (WIFSIGNALED(*status)) {
      const int sig = WTERMSIG(*status);
      std::fprintf(stderr, "[LocalLauncher] rank %lld was killed by signal %d (%s)\n", static_cast<long long>(child.rank),
                   sig, signal_name(sig).c_str());
      result_ = 128 + sig;
    } else {
      const int code = WEXITSTATUS(*status);
      std::fprintf(stderr, "[LocalLauncher] rank %lld exited with code %d\n", static_cast<long long>(child.rank), code);
      result_ = code;
    }
    std::fflush(stderr);
    stop(SIGTERM);
  }

  void signal_running(int sig) {
    // A child that exited but is not reaped yet is a zombie holding its pid,
    // so the pid cannot have been reused by an unrelated process.
    for (const auto& child : children_) {
      if (child.running) ::kill(child.pid, sig);
    }
  }

  size_t count_running() const {
    size_t n = 0;
    for (const auto& child : children_) n += child.running ? 1 : 0;
    return n;
  }

  std::vector<Child>& children_;
  Clock::duration grace_;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point deadline_{};
  int result_ = 0;
};

// The environment of the process with global rank `rank`: this process's
// own, less the launcher's variables, plus that rank's.
ChildSpec make_spec(const LocalLauncherOptions& o, int64_t local_rank, int64_t port) {
  ChildSpec spec;
  spec.rank = o.node_rank() * o.nprocs() + local_rank;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view kv(*entry);
    const auto name = kv.substr(0, kv.find('='));
    bool ours = false;
    for (const char* var : kLauncherVariables) ours = ours || name == var;
    if (!ours) spec.env_storage.emplace_back(kv);
  }
  for (const auto& [name, value] : launcher_variables(o, local_rank, port)) {
    spec.env_storage.push_back(name + "=" + value);
  }
  for (auto& s : spec.env_storage) spec.envp.push_back(s.data());
  spec.envp.push_back(nullptr);
  spec.exec_error = fmt::format("[LocalLauncher] rank {} could not execute {} (errno ", spec.rank, kSelfExe);
  return spec;
}

// This process's command line as the kernel holds it (NUL-separated).
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  if (args.empty()) throw std::runtime_error("[LocalLauncher::start_peers] cannot read /proc/self/cmdline");
  return args;
}

// Peers that start_peers() started; they belong to the process (see the header).
std::mutex g_peers_mutex;
std::vector<Child> g_peers;

void join_peers_at_exit() { LocalLauncher::join_peers(); }

}  // namespace

LocalLauncher::LocalLauncher(LocalLauncherOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  if (o.nprocs() < 1) {
    throw std::invalid_argument(fmt::format("[LocalLauncher::LocalLauncher] nprocs must be >= 1, got {}", o.nprocs()));
  }
  if (o.num_nodes() < 1) {
    throw std::invalid_argument(
        fmt::format("[LocalLauncher::LocalLauncher] num_nodes must be >= 1, got {}", o.num_nodes()));
  }
  if (o.node_rank() < 0 || o.node_rank() >= o.num_nodes()) {
    throw std::invalid_argument(fmt::format(
        "[LocalLauncher::LocalLauncher] node_rank must be in [0, num_nodes) = [0, {}), got {}", o.num_nodes(),
        o.node_rank()));
  }
  if (o.main_address().empty()) {
    throw std::invalid_argument("[LocalLauncher::LocalLauncher] main_address must not be empty");
  }
  if (o.main_port() < 0 || o.main_port() > 65535) {
    throw std::invalid_argument(
        fmt::format("[LocalLauncher::LocalLauncher] main_port must be in [0, 65535], got {}", o.main_port()));
  }
  if (o.main_port() == 0 && o.num_nodes() > 1) {
    throw std::invalid_argument(fmt::format(
        "[LocalLauncher::LocalLauncher] main_port 0 (pick a free port) needs num_nodes == 1, got num_nodes {}; "
        "set main_port to a port every node agrees on",
        o.num_nodes()));
  }
  if (!std::isfinite(o.grace_period_s()) || o.grace_period_s() < 0) {
    throw std::invalid_argument(fmt::format(
        "[LocalLauncher::LocalLauncher] grace_period_s must be a finite number >= 0, got {}", o.grace_period_s()));
  }
}

int LocalLauncher::pick_free_port(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(address.c_str(), "0", &hints, &found); rc != 0) {
    throw std::runtime_error(
        fmt::format("[LocalLauncher::pick_free_port] cannot resolve address '{}': {}", address, ::gai_strerror(rc)));
  }
  int last_errno = 0;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    int port = -1;
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      if (bound.ss_family == AF_INET) port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      if (bound.ss_family == AF_INET6) port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    } else {
      last_errno = errno;
    }
    ::close(fd);
    if (port > 0) {
      ::freeaddrinfo(found);
      return port;
    }
  }
  ::freeaddrinfo(found);
  throw std::runtime_error(fmt::format("[LocalLauncher::pick_free_port] cannot bind a TCP port on '{}': {}", address,
                                       last_errno != 0 ? std::strerror(last_errno) : "no usable address"));
}

int LocalLauncher::launch(int argc, const char* const* argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) {
    throw std::invalid_argument(
        fmt::format("[LocalLauncher::launch] argv must hold at least argv[0], got argc {}", argc));
  }
  bool expected = false;
  if (!g_launch_active.compare_exchange_strong(expected, true)) {
    throw std::logic_error("[LocalLauncher::launch] another launch() is already running in this process");
  }
  struct ActiveReset {
    ~ActiveReset() { g_launch_active.store(false); }
  } active_reset;

  const auto& o = options_;
  const int64_t port = o.main_port() != 0 ? o.main_port() : pick_free_port(o.main_address());

  // execve wants char* const*; the strings are not modified.
  std::vector<char*> child_argv;
  child_argv.reserve(static_cast<size_t>(argc) + 1);
  for (int i = 0; i < argc; ++i) child_argv.push_back(const_cast<char*>(argv[i]));
  child_argv.push_back(nullptr);

  std::vector<ChildSpec> specs;
  for (int64_t local_rank = 0; local_rank < o.nprocs(); ++local_rank) specs.push_back(make_spec(o, local_rank, port));

  g_received_signal.store(0);
  SignalGuard guard;
  std::vector<Child> children;
  children.reserve(specs.size());
  Supervisor supervisor(children, o.grace_period_s());
  const pid_t self = ::getpid();

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);

  for (const auto& spec : specs) {
    // Interrupted during start-up: start no more; the loop forwards the signal.
    if (g_received_signal.load() != 0) break;
    // Blocked across fork() so the child cannot take a stop signal with our
    // recorder still installed (it would be swallowed and the child would
    // run on); the child unblocks it after restoring the dispositions.
    sigset_t original_mask;
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, &original_mask);
    const pid_t pid = ::fork();
    if (pid == 0) exec_child(spec, child_argv.data(), self, &guard, original_mask);
    const int fork_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
    if (pid < 0) {
      supervisor.stop(SIGTERM);
      supervisor.run();
      throw std::runtime_error(fmt::format("[LocalLauncher::launch] fork failed for rank {}: {}", spec.rank,
                                           std::strerror(fork_errno)));
    }
    children.push_back({spec.rank, pid, true});
  }

  const int result = supervisor.run();
  // A signal that arrived after the last child was reaped has nothing left to stop.
  g_received_signal.store(0);
  return result;
}

void LocalLauncher::start_peers() {
  const auto& o = options_;
  const std::vector<std::string> args = own_command_line();
  std::vector<char*> child_argv;
  for (const auto& arg : args) child_argv.push_back(const_cast<char*>(arg.c_str()));
  child_argv.push_back(nullptr);
  const int64_t port = o.main_port() != 0 ? o.main_port() : pick_free_port(o.main_address());
  std::vector<ChildSpec> specs;
  for (int64_t local_rank = 1; local_rank < o.nprocs(); ++local_rank) specs.push_back(make_spec(o, local_rank, port));

  std::lock_guard<std::mutex> lock(g_peers_mutex);
  static const bool registered = std::atexit(join_peers_at_exit) == 0;
  (void)registered;
  // The stop signals stay blocked across fork() so a child never runs our
  // handler (whose effect would be lost in it); it unblocks before exec.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);
  const pid_t self = ::getpid();
  for (const auto& spec : specs) {
    sigset_t original_mask;
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, &original_mask);
    const pid_t pid = ::fork();
    if (pid == 0) exec_child(spec, child_argv.data(), self, nullptr, original_mask);
    const int fork_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
    if (pid < 0) {
      Supervisor supervisor(g_peers, o.grace_period_s());
      supervisor.stop(SIGTERM);
      supervisor.run();
      throw std::runtime_error(fmt::format("[LocalLauncher::start_peers] fork failed for rank {}: {}", spec.rank,
                                           std::strerror(fork_errno)));
    }
    g_peers.push_back({spec.rank, pid, true});
  }
  for (const auto& [name, value] : launcher_variables(o, 0, port)) ::setenv(name.c_str(), value.c_str(), 1);
}

int LocalLauncher::join_peers(bool stop, double grace_period_s) {
  std::lock_guard<std::mutex> lock(g_peers_mutex);
  if (g_peers.empty()) return 0;
  Supervisor supervisor(g_peers, grace_period_s);
  if (stop) {
    // This process failed, often because a peer died: its connection can
    // close a moment before it can be reaped. Wait that moment, so the line
    // names the dead peer and not the ones stopped here.
    for (int tick = 0; tick < 25 && !supervisor.found_failure(); ++tick) {
      supervisor.poll();
      struct timespec pause {0, 20'000'000};
      ::nanosleep(&pause, nullptr);
    }
    supervisor.stop(SIGTERM);
  }
  const int result = supervisor.run();
  g_peers.clear();
  return result;
}

}  // namespace fulgur
