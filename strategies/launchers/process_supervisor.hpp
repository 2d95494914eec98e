#pragma once

#include <fulgur/core/stop_signals.hpp>

#include <csignal>
#include <mutex>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace fulgur {

/// Starts copies of the running program (/proc/self/exe) as the ranks of a
/// job and watches them: the first rank that exits non-zero or dies by a
/// signal is reported on stderr in one line ("[<name>] rank 1 exited with
/// code 3"), and the others are stopped (SIGTERM, then SIGKILL after the
/// grace period). Ranks die with the thread that started them even when
/// this process is SIGKILLed (PR_SET_PDEATHSIG). The destructor waits for
/// the ranks still running, so none outlives its supervisor unwatched.
/// Used by both launchers (LocalLauncher, SubprocessLauncher).
class ProcessSupervisor {
 public:
  /// While alive, SIGINT and SIGTERM are recorded through StopSignals (the
  /// library's one signal mechanism) for wait() to act on — for a supervisor
  /// that only supervises: the torchrun-like LocalLauncher — and SIGCHLD is
  /// at its default, since an ignored SIGCHLD makes the kernel reap children
  /// itself and hides how a rank ended. The previous dispositions are back
  /// when it is destroyed.
  class Signals {
   public:
    Signals();
    ~Signals();
    Signals(const Signals&) = delete;
    Signals& operator=(const Signals&) = delete;
    /// The signal received since the last call (0: none); clears it.
    int take();
    bool pending() const;
    /// Async-signal-safe: puts SIGCHLD back in a forked rank before exec.
    void restore_in_child() const;

   private:
    StopSignals held_;
    struct sigaction old_chld_ {};
  };

  /// `name` prefixes every line it prints ("LocalLauncher").
  ProcessSupervisor(std::string name, double grace_period_s);
  /// Waits for the ranks still running (see wait()).
  ~ProcessSupervisor();
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  /// Starts /proc/self/exe with `argv` (argv[0] included) and this process's
  /// environment, less any variable named in `environment`, plus those.
  /// The program's own signal handlers (StopSignals::restore_in_child) and
  /// `signals`' SIGCHLD are put back in the child before exec. When
  /// fork fails, stops the ranks started so far and throws.
  void start(int64_t rank, const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& environment,
             const Signals* signals = nullptr);

  /// Asks every running rank to stop with `sig`; SIGKILL follows after the grace period.
  void stop(int sig);
  /// Reaps the ranks that already ended, reporting the first failure.
  void poll();
  /// From any thread (a watcher, while the owner's thread is held in a
  /// collective by a stopped or dead rank): `sig` (SIGTERM, SIGINT) to the
  /// ranks still running, SIGKILL to those left after the grace period.
  /// Blocks up to the grace period; reaps nothing (wait() does, and reports
  /// how they ended).
  void terminate_running(int sig);
  bool found_failure() const { return result_ != 0; }
  bool empty() const { return children_.empty(); }

  /// Waits until every rank ended and returns 0 when all exited 0, else the
  /// first failure's code (128 + signal when one was killed). With
  /// `signals`, a SIGINT/SIGTERM this process receives stops the ranks
  /// (a second one kills them at once) and the result is 128 + signal.
  /// Every rank is forgotten afterwards; the supervisor can start new ones.
  int wait(Signals* signals = nullptr);

  /// This process's command line as the kernel holds it
  /// (/proc/self/cmdline): what a copy of the program is started with.
  static std::vector<std::string> own_command_line();

 private:
  struct Child {
    int64_t rank = 0;
    pid_t pid = -1;
    bool running = false;
  };
  void on_signal(int sig);
  void on_exit(const Child& child, const int* status);
  void signal_running(int sig);
  size_t count_running() const;

  std::string name_;
  double grace_period_s_;
  std::vector<Child> children_;
  // children_ and the kills: terminate_running() runs on another thread.
  mutable std::recursive_mutex children_mutex_;
  bool stopping_ = false;
  bool killed_ = false;
  double stop_deadline_s_ = 0;  // on the monotonic clock
  int result_ = 0;
};

}  // namespace fulgur
