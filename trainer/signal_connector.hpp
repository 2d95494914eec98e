#pragma once

#include <csignal>
#include <cstdint>

namespace fulgur {

class Strategy;

/// Turns SIGUSR1 (SLURM's "time is almost up" warning, asked for with
/// `#SBATCH --signal=USR1@90`) and SIGTERM (scancel, preemption, a launcher
/// shutting its ranks down) into a number the training loop reads at step
/// boundaries. The handler only records the signal: nothing else is
/// async-signal-safe, and every rank has to agree on the step to stop at
/// anyway, which needs a collective in normal code (agree_to_stop).
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
  /// (stopping for good outranks "time is almost up"), else SIGUSR1, else 0.
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
  /// At the start of a fit: a signal an earlier fit stopped on is done with.
  void start_fit();

  /// "SIGUSR1", "SIGTERM", or "signal N".
  static const char* name(int signal);

 private:
  struct sigaction old_usr1_ {};
  struct sigaction old_term_ {};
  int stop_signal_ = 0;
};

}  // namespace fulgur
