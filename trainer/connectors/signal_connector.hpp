#pragma once

#include <csignal>
#include <cstdint>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <string>

namespace fulgur {

class Strategy;

/// Turns SIGUSR1 (SLURM's "time is almost up" warning, asked for with
/// `#SBATCH --signal=USR1@90`), SIGTERM (scancel, preemption, a launcher
/// shutting its ranks down) and SIGINT (Ctrl-C) into a number the training
/// loop reads at step boundaries. The handler only records the signal:
/// nothing else is async-signal-safe, and every rank has to agree on the
/// step to stop at anyway, which needs a collective in normal code
/// (agree_to_stop).
///
/// A stop signal always wins, and the program keeps its process: a SIGTERM
/// or SIGINT that no step boundary acts on within the grace period (25 s,
/// below the 30 s after which SLURM and torchrun send SIGKILL;
/// FULGUR_SIGNAL_GRACE_S sets it) is handled by a watcher thread of the
/// outermost connector, which prints one line saying where the process was
/// held and then
/// - during fit, held in a collective (a peer stopped or dead): calls the
///   on_stuck action (the Trainer aborts its process group and ends the
///   ranks it started), so the collective fails and fit throws a
///   StopSignalError (stop_error());
/// - otherwise (held in the program's own code, or outside fit): puts the
///   handlers it replaced back and sends the signal again, so the program's
///   own handler, or the default action, gets it. Outside fit, where no step
///   boundary comes, a SIGINT is passed on at once.
///
/// Handlers are installed by the constructor and the previous ones restored
/// by the destructor. Connectors nest (destroyed in reverse order), e.g. two
/// Trainers alive at once; a connector is inner when the handler it replaces
/// is a connector's. Only the outermost clears the recorded signal, so a
/// signal that arrives before fit (SLURM's warning can come while the
/// program is still loading its data; the Trainer holds its connector from
/// construction) is acted on at fit's first step boundary instead of being
/// forgotten. The recorded signal and the count of signals not acted on are
/// the only file-level state: a signal handler can reach nothing else.
class SignalConnector {
 public:
  SignalConnector();
  ~SignalConnector();
  SignalConnector(const SignalConnector&) = delete;
  SignalConnector& operator=(const SignalConnector&) = delete;

  /// The signal received since construction: SIGTERM if it came at all
  /// (stopping for good outranks Ctrl-C, which outranks "time is almost
  /// up"), else SIGINT, else SIGUSR1, else 0.
  int received() const;
  /// Forgets the recorded signal (it was acted on).
  void clear();

  /// What the watcher calls (on its thread, with the signal) when fit is
  /// held in a collective past the grace period: it must make the
  /// collective fail (abort the process group, end the peers this process
  /// started). `strategy` says whether and where fit waits in a collective
  /// (Strategy::collective_wait) and names this process's rank.
  void on_stuck(const Strategy& strategy, std::function<void(int signal)> action);

  /// Where a stop check is due (Trainer::stop_check_due), the training loop
  /// asks whether the ranks stop after this step: an all_reduce max of the
  /// signal each received, so every rank stops after the same step. The
  /// first agreed signal becomes stop_signal() and each rank prints one
  /// line. Returns true when training should stop. Every rank must call it.
  bool agree_to_stop(Strategy& strategy, int64_t global_step);
  /// The signal the running or last fit stopped on (0: none).
  int stop_signal() const { return stop_signal_; }
  /// A failure of fit while a SIGTERM/SIGINT waited to be acted on (the
  /// watcher made the collective fail, or a peer that ended on the signal
  /// broke it) becomes a StopSignalError naming the signal and where the
  /// process was, and the signal counts as acted on (the watcher stands
  /// down); any other error is returned as it is.
  std::exception_ptr stop_error(const std::exception_ptr& error);
  /// At the start of a fit: a signal an earlier fit stopped on is done with.
  void start_fit();
  /// At the end of a fit: no step boundary will act on a signal now.
  void end_fit();

  /// "SIGUSR1", "SIGTERM", "SIGINT", or "another signal".
  static const char* name(int signal);

 private:
  class Watcher;
  /// Restores the handlers this connector replaced (SIGUSR1 as `usr1`).
  void restore(const struct sigaction& usr1) const;
  /// This process's rank for the lines printed (0 before on_stuck).
  int64_t rank() const;
  /// The watcher's decision once a stop signal waited past the grace period.
  void act_on_unacted(double waited_s);

  struct sigaction old_usr1_ {};
  struct sigaction old_term_ {};
  struct sigaction old_int_ {};
  bool outermost_ = false;
  int stop_signal_ = 0;
  std::atomic<bool> fitting_{false};
  /// Set by the watcher: the line it printed when it made fit's collective fail.
  std::atomic<bool> forced_{false};
  std::string forced_line_;
  std::function<void(int)> on_stuck_;
  const Strategy* strategy_ = nullptr;
  std::unique_ptr<Watcher> watcher_;  // the outermost connector's
};

}  // namespace fulgur
