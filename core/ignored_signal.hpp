#pragma once

namespace fulgur {

/// While alive, a signal whose action is the default is ignored; a handler
/// the program installed itself is left alone. The first holder of a signal
/// changes its action and the last one puts back what it found, in any
/// order.
///
/// SIGPIPE, held by every run (RunSettings) and only while it runs: a write
/// to the socket of a peer that died then fails with EPIPE and the process
/// group reports which rank died, instead of the process being killed
/// silently (Python ignores SIGPIPE at start-up for the same reason).
///
/// SIGUSR1, held by the command line (`cli::run`) and by a program's own
/// main() that wants the same: SLURM's time-limit warning can come before
/// the first step or after the last one, where no run records it (runs do,
/// through StopSignals), and its default action would end a job that
/// finished well.
class IgnoredSignal {
 public:
  explicit IgnoredSignal(int signal);
  ~IgnoredSignal();
  IgnoredSignal(const IgnoredSignal&) = delete;
  IgnoredSignal& operator=(const IgnoredSignal&) = delete;

 private:
  int signal_;
};

}  // namespace fulgur
