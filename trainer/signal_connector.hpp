#pragma once

#include <csignal>

namespace fulgur {

/// Turns SIGUSR1 (SLURM's "time is almost up" warning, asked for with
/// `#SBATCH --signal=USR1@90`) and SIGTERM (scancel, preemption, a launcher
/// shutting its ranks down) into a number the training loop reads at step
/// boundaries. The handler only records the signal: nothing else is
/// async-signal-safe, and every rank has to agree on the step to stop at
/// anyway, which needs a collective in normal code (Trainer::check_stop_signal).
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

  /// "SIGUSR1", "SIGTERM", or "signal N".
  static const char* name(int signal);

 private:
  struct sigaction old_usr1_ {};
  struct sigaction old_term_ {};
};

}  // namespace fulgur
