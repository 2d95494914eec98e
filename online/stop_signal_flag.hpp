#pragma once

#include <csignal>

namespace fulgur {

/// While alive, SIGTERM and SIGUSR1 (SLURM's time-limit warning and its
/// end) are only recorded, so training can save a checkpoint at a step
/// boundary and stop; the program's own handlers come back when it ends.
/// One per process at a time (the flag is process-wide).
class StopSignalFlag {
 public:
  StopSignalFlag();
  ~StopSignalFlag();
  StopSignalFlag(const StopSignalFlag&) = delete;
  StopSignalFlag& operator=(const StopSignalFlag&) = delete;

  /// The signal received since construction, 0 if none.
  int signal() const;

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_usr1_ {};
};

}  // namespace fulgur
