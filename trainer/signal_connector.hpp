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
/// by the destructor; one connector is meant to be alive at a time (the
/// Trainer holds one during fit).
class SignalConnector {
 public:
  SignalConnector();
  ~SignalConnector();
  SignalConnector(const SignalConnector&) = delete;
  SignalConnector& operator=(const SignalConnector&) = delete;

  /// The signal received since construction: SIGTERM if it came at all
  /// (stopping for good outranks "time is almost up"), else SIGUSR1, else 0.
  int received() const;

  /// "SIGUSR1", "SIGTERM", or "signal N".
  static const char* name(int signal);

 private:
  struct sigaction old_usr1_ {};
  struct sigaction old_term_ {};
};

}  // namespace fulgur
