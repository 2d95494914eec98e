#pragma once

#include <fulgur/core/stop_signals.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace fulgur {

class Strategy;

/// The Trainer's side of StopSignals: SIGUSR1 (SLURM's time-limit warning,
/// `#SBATCH --signal=USR1@90`), SIGTERM (scancel, preemption, a launcher
/// stopping its ranks) and SIGINT (Ctrl-C) become a decision the loops act
/// on. Nothing is installed until a run begins (begin_run) and the
/// program's handlers are back when it ends (end_run), as Lightning's
/// signal connector does around `trainer.fit`.
///
/// During fit the ranks agree at step boundaries (agree_to_stop) and stop
/// after the same step. A SIGTERM or SIGINT that no step boundary acts on
/// within the grace period (25 s, below the 30 s after which SLURM and
/// torchrun send SIGKILL; FULGUR_SIGNAL_GRACE_S sets it) is handled by a
/// watcher thread that lives as long as the run (outside fit — validate,
/// test, predict — where no step boundary comes, at once: check() throws
/// at the next hook, and the watcher acts only on a held collective):
/// - held in a collective (a peer stopped or dead): it calls the on_stuck
///   action (the Trainer aborts its process group and ends the ranks it
///   started), so the collective fails and the run throws StopSignalError
///   (stop_error());
/// - otherwise: the run throws StopSignalError at the next point the main
///   thread reaches the Trainer's code (check()).
class SignalConnector {
 public:
  /// Reads FULGUR_SIGNAL_GRACE_S (std::invalid_argument when malformed);
  /// installs nothing.
  SignalConnector();
  ~SignalConnector();
  SignalConnector(const SignalConnector&) = delete;
  SignalConnector& operator=(const SignalConnector&) = delete;

  /// Installs the handlers (StopSignals) and starts the watcher; `fitting`
  /// says whether step boundaries will act on a signal.
  void begin_run(bool fitting);
  /// Stops the watcher and puts the program's handlers back (a SIGTERM
  /// nothing acted on goes to the program's handler then: StopSignals).
  void end_run();

  /// The signal received since the run began: SIGTERM if it came at all,
  /// else SIGINT, else SIGUSR1, else 0.
  int received() const;

  /// What the watcher calls (on its thread, with the signal) when the run
  /// is held in a collective past the grace period: it must make the
  /// collective fail (abort the process group, end the peers this process
  /// started). `strategy` says whether and where the run waits in a
  /// collective (Strategy::collective_wait) and names this process's rank.
  void on_stuck(const Strategy& strategy, std::function<void(int signal)> action);

  /// Where a stop check is due (RunContext::stop_check_due), the training
  /// loop asks whether the ranks stop after this step: an all_reduce max of
  /// the signal each received, so every rank stops after the same step. The
  /// first agreed signal becomes stop_signal() and each rank prints one
  /// line. Returns true when training should stop. Every rank must call it.
  bool agree_to_stop(Strategy& strategy, int64_t global_step);
  /// The signal the running or last fit stopped on (0: none).
  int stop_signal() const { return stop_signal_; }
  /// Throws StopSignalError when the watcher found a SIGTERM/SIGINT that
  /// nothing will act on (see the class comment); the loops call it at
  /// every hook.
  void check();
  /// A failure of the run while a SIGTERM/SIGINT waited to be acted on (the
  /// watcher made the collective fail, or a peer that ended on the signal
  /// broke it) becomes a StopSignalError naming the signal and where the
  /// process was, and the signal counts as acted on; any other error is
  /// returned as it is.
  std::exception_ptr stop_error(const std::exception_ptr& error);

  static const char* name(int signal) { return StopSignals::name(signal); }

 private:
  class Watcher;
  /// This process's rank for the lines printed (0 before on_stuck).
  int64_t rank() const;
  /// The watcher's decision once a stop signal waited past the grace period.
  void act_on_unacted(double waited_s);

  double grace_s_;
  int stop_signal_ = 0;
  std::atomic<bool> fitting_{false};
  /// Set by the watcher: the line it printed when it made the collective fail.
  std::atomic<bool> forced_{false};
  /// Set by the watcher: the signal check() throws (0: none).
  std::atomic<int> expired_{0};
  std::string watcher_line_;
  std::function<void(int)> on_stuck_;
  const Strategy* strategy_ = nullptr;
  std::optional<StopSignals> held_;   // during a run
  std::unique_ptr<Watcher> watcher_;  // during a run, when this run installed the handlers
};

}  // namespace fulgur
