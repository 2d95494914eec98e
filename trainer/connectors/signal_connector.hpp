#pragma once

#include <csignal>
#include <cstdint>
#include <exception>
#include <memory>

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
/// A stop signal always wins: a SIGTERM or SIGINT that no step boundary
/// acts on within the grace period (25 s, below the 30 s after which SLURM
/// and torchrun send SIGKILL; FULGUR_SIGNAL_GRACE_S sets it) ends the
/// process with 128 + signal and one line saying where it was held, e.g. in
/// a collective a peer never joins. A watcher thread of the outermost
/// connector checks this. Outside fit, where no step boundary comes, a
/// SIGINT ends the process at once, as without a handler.
///
/// Handlers are installed by the constructor and the previous ones restored
/// by the destructor. Connectors nest (destroyed in reverse order), e.g. two
/// Trainers alive at once. Only the outermost constructor clears the
/// recorded signal, so a signal that arrives before fit (SLURM's warning can
/// come while the program is still loading its data; the Trainer holds its
/// connector from construction) is acted on at fit's first step boundary
/// instead of ending the process or being forgotten.
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

  /// Where a stop check is due (Trainer::stop_check_due), the training loop
  /// asks whether the ranks stop after this step: an all_reduce max of the
  /// signal each received, so every rank stops after the same step. The
  /// first agreed signal becomes stop_signal() and each rank prints one
  /// line. Returns true when training should stop. Every rank must call it.
  bool agree_to_stop(Strategy& strategy, int64_t global_step);
  /// The signal the running or last fit stopped on (0: none).
  int stop_signal() const { return stop_signal_; }
  /// A failure while a SIGTERM/SIGINT waits to be acted on (typically a
  /// collective broken by a peer that ended on the same signal) ends the
  /// process as the signal would: one line with the error, 128 + signal.
  /// Otherwise returns, and the error takes its usual path.
  static void end_if_stop_pending(const std::exception_ptr& error);
  /// At the start of a fit: a signal an earlier fit stopped on is done with.
  void start_fit();
  /// At the end of a fit: no step boundary will act on a signal now (a
  /// SIGINT ends the process at once, a SIGTERM after the grace period).
  void end_fit();

  /// "SIGUSR1", "SIGTERM", "SIGINT", or "another signal".
  static const char* name(int signal);

 private:
  class Watcher;
  struct sigaction old_usr1_ {};
  struct sigaction old_term_ {};
  struct sigaction old_int_ {};
  int stop_signal_ = 0;
  std::unique_ptr<Watcher> watcher_;  // the outermost connector's
};

}  // namespace fulgur
