#include <fulgur/strategies/launchers/process_supervisor.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ctime>
#include <stdexcept>
#include <string_view>

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fulgur {
namespace {

constexpr const char* kSelfExe = "/proc/self/exe";

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  return "unknown signal";
}

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Everything a child needs, built before fork(): between fork and exec only
// async-signal-safe calls are allowed (LibTorch may have threads running).
struct ChildSpec {
  std::vector<std::string> argv_storage;
  std::vector<char*> argv;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  std::string exec_error;  // written verbatim if execve fails
};

// Runs in the forked child; never returns.
[[noreturn]] void exec_child(const ChildSpec& spec, pid_t supervisor, const ProcessSupervisor::Signals* signals,
                             const sigset_t& original_mask) {
  StopSignals::restore_in_child();
  if (signals != nullptr) signals->restore_in_child();
  // Die with the supervisor even if it is SIGKILLed. If it died before prctl
  // took effect, we were re-parented already and must not run unsupervised.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != supervisor) ::_exit(127);
  // A SIGTERM sent while we were blocked is delivered here, with the
  // restored disposition, so a stop request during start-up is not lost.
  ::pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
  ::execve(kSelfExe, spec.argv.data(), spec.envp.data());
  const int err = errno;
  write_all(STDERR_FILENO, spec.exec_error.data(), spec.exec_error.size());
  char digits[16];
  int n = 0;
  for (int e = err; n == 0 || e > 0; e /= 10) digits[n++] = static_cast<char>('0' + e % 10);
  for (int i = n - 1; i >= 0; --i) write_all(STDERR_FILENO, &digits[i], 1);
  write_all(STDERR_FILENO, ")\n", 2);
  ::_exit(127);
}

}  // namespace

ProcessSupervisor::Signals::Signals() {
  struct sigaction default_chld {};
  default_chld.sa_handler = SIG_DFL;
  sigemptyset(&default_chld.sa_mask);
  ::sigaction(SIGCHLD, &default_chld, &old_chld_);
}

ProcessSupervisor::Signals::~Signals() {
  ::sigaction(SIGCHLD, &old_chld_, nullptr);
  StopSignals::mark_acted();  // wait() acted on it: stopping the ranks
}

int ProcessSupervisor::Signals::take() { return StopSignals::take(); }

bool ProcessSupervisor::Signals::pending() const { return StopSignals::received() != 0; }

void ProcessSupervisor::Signals::restore_in_child() const { ::sigaction(SIGCHLD, &old_chld_, nullptr); }

ProcessSupervisor::ProcessSupervisor(std::string name, double grace_period_s)
    : name_(std::move(name)), grace_period_s_(grace_period_s) {}

ProcessSupervisor::~ProcessSupervisor() {
  if (!children_.empty()) wait();
}

void ProcessSupervisor::start(int64_t rank, const std::vector<std::string>& argv,
                              const std::vector<std::pair<std::string, std::string>>& environment,
                              const Signals* signals) {
  ChildSpec spec;
  spec.argv_storage = argv;
  for (auto& arg : spec.argv_storage) spec.argv.push_back(arg.data());
  spec.argv.push_back(nullptr);
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view kv(*entry);
    const auto name = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& [var, value] : environment) replaced = replaced || name == var;
    if (!replaced) spec.env_storage.emplace_back(kv);
  }
  for (const auto& [var, value] : environment) spec.env_storage.push_back(var + "=" + value);
  for (auto& s : spec.env_storage) spec.envp.push_back(s.data());
  spec.envp.push_back(nullptr);
  spec.exec_error = fmt::format("[{}] rank {} could not execute {} (errno ", name_, rank, kSelfExe);

  // The stop signals stay blocked across fork() so a child never runs this
  // process's handler (its effect would be lost there); it unblocks them
  // after exec_child put the dispositions back.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);
  sigset_t original_mask;
  const pid_t self = ::getpid();
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, &original_mask);
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(spec, self, signals, original_mask);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
  if (pid < 0) {
    stop(SIGTERM);
    wait();
    throw std::runtime_error(fmt::format("[{}] fork failed for rank {}: {}", name_, rank, std::strerror(fork_errno)));
  }
  const std::lock_guard lock(children_mutex_);
  children_.push_back({rank, pid, true});
}

void ProcessSupervisor::stop(int sig) {
  if (stopping_) return;
  stopping_ = true;
  stop_deadline_s_ = now_s() + grace_period_s_;
  signal_running(sig);
}

void ProcessSupervisor::poll() {
  const std::lock_guard lock(children_mutex_);
  for (auto& child : children_) {
    if (!child.running) continue;
    int status = 0;
    const pid_t r = ::waitpid(child.pid, &status, WNOHANG);
    if (r == 0) continue;
    if (r < 0) {
      if (errno == EINTR) continue;
      // ECHILD: reaped behind our back (a host program waiting for any child); its
      // status is lost, so count it as failed rather than hang.
      child.running = false;
      on_exit(child, nullptr);
      continue;
    }
    child.running = false;
    on_exit(child, &status);
  }
}

int ProcessSupervisor::wait(Signals* signals) {
  // Checks for a signal before the first reap, so one that arrived before
  // any rank started still yields 128 + signal.
  for (;;) {
    if (signals != nullptr) {
      if (const int sig = signals->take(); sig != 0) on_signal(sig);
    }
    poll();
    if (count_running() == 0) break;
    if (stopping_ && !killed_ && now_s() >= stop_deadline_s_) {
      signal_running(SIGKILL);
      killed_ = true;
    }
    // nanosleep, not std::this_thread::sleep_for: the latter resumes after
    // EINTR, and a signal should be acted on at once.
    struct timespec tick {0, 20'000'000};
    ::nanosleep(&tick, nullptr);
  }
  const int result = result_;
  const std::lock_guard lock(children_mutex_);
  children_.clear();
  stopping_ = killed_ = false;
  result_ = 0;
  return result;
}

void ProcessSupervisor::on_signal(int sig) {
  if (!stopping_) {
    std::fprintf(stderr, "[%s] received %s, stopping %zu rank(s)\n", name_.c_str(), signal_name(sig).c_str(),
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

void ProcessSupervisor::on_exit(const Child& child, const int* status) {
  const bool failed =
      status == nullptr || WIFSIGNALED(*status) || (WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
  if (!failed || stopping_) return;  // only the first failure is reported
  const auto rank = static_cast<long long>(child.rank);
  if (status == nullptr) {
    std::fprintf(stderr, "[%s] rank %lld ended with an unknown status (reaped elsewhere)\n", name_.c_str(), rank);
    result_ = 1;
  } else if (WIFSIGNALED(*status)) {
    const int sig = WTERMSIG(*status);
    std::fprintf(stderr, "[%s] rank %lld was killed by signal %d (%s)\n", name_.c_str(), rank, sig,
                 signal_name(sig).c_str());
    result_ = 128 + sig;
  } else {
    const int code = WEXITSTATUS(*status);
    std::fprintf(stderr, "[%s] rank %lld exited with code %d\n", name_.c_str(), rank, code);
    result_ = code;
  }
  std::fflush(stderr);
  stop(SIGTERM);
}

void ProcessSupervisor::terminate_running(int sig) {
  signal_running(sig);
  const double deadline = now_s() + grace_period_s_;
  for (;;) {
    bool any = false;
    {
      const std::lock_guard lock(children_mutex_);
      for (const auto& child : children_) {
        siginfo_t info{};
        // WNOWAIT: looks without reaping, so wait() still learns how it ended.
        any = any || (child.running && ::waitid(P_PID, static_cast<id_t>(child.pid), &info,
                                                 WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0);
      }
    }
    if (!any) return;
    if (now_s() >= deadline) break;
    struct timespec tick {0, 20'000'000};
    ::nanosleep(&tick, nullptr);
  }
  signal_running(SIGKILL);
}

void ProcessSupervisor::signal_running(int sig) {
  const std::lock_guard lock(children_mutex_);
  // A child that exited but is not reaped yet is a zombie holding its pid,
  // so the pid cannot have been reused by an unrelated process.
  for (const auto& child : children_) {
    if (child.running) ::kill(child.pid, sig);
  }
}

std::vector<std::string> ProcessSupervisor::own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  if (args.empty()) throw std::runtime_error("[ProcessSupervisor::own_command_line] cannot read /proc/self/cmdline");
  return args;
}

size_t ProcessSupervisor::count_running() const {
  const std::lock_guard lock(children_mutex_);
  size_t n = 0;
  for (const auto& child : children_) n += child.running ? 1 : 0;
  return n;
}

}  // namespace fulgur
