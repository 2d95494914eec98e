#pragma once

#include <csignal>

namespace fulgur {

/// The library's one way of hearing SIGUSR1 (SLURM's "time is almost up"),
/// SIGTERM (scancel, preemption, a launcher stopping its ranks) and SIGINT
/// (Ctrl-C). The Trainer's runs, the launcher and the online trainer all
/// hold one while they run, and only while they run.
///
/// While at least one StopSignals is alive, the three signals are recorded
/// (the strongest kept: SIGTERM over SIGINT over SIGUSR1), with SA_RESTART
/// so a read or a collective they interrupt carries on. The first one saves
/// the program's own dispositions; when the last one ends — in any order,
/// from any thread — exactly those are put back. The program's rules hold
/// meanwhile, as with Lightning's signal connector: a signal the program
/// handles with a function of its own reaches that function too, when it
/// comes (chained); a signal the program ignores (SIG_IGN) is still recorded
/// (launchers and a shell's background jobs ignore SIGINT and SIGUSR1 on the
/// program's behalf) and stays ignored afterwards; a SIGTERM or SIGINT under
/// the default action that nothing acted on (mark_acted) is raised again
/// when the last holder ends, so the default action happens then; an
/// unacted SIGUSR1 (a warning) is dropped.
///
/// The recorded signal is the only file-level state, because a signal
/// handler can reach nothing else.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// True for the holder that installed the handlers (no other was alive).
  bool first() const { return first_; }

  /// The strongest signal recorded since the handlers were installed, 0: none.
  static int received();
  /// received(), and forgets it (the launcher acts on each one once).
  static int take();
  /// SIGTERMs and SIGINTs recorded that nothing has acted on yet.
  static int unacted();
  /// The recorded SIGTERM/SIGINT was acted on: nothing passes it on.
  static void mark_acted();
  /// Forgets everything recorded.
  static void clear();

  /// Puts the program's own handlers back while holders are still alive:
  /// async-signal-safe, for a forked child before exec (it starts with the
  /// dispositions of the program that launched it). No-op when none is alive.
  static void restore_in_child();

  /// How strongly a signal asks to stop: SIGTERM 3, SIGINT 2, SIGUSR1 1, else 0.
  static int strength(int signal);
  /// "SIGUSR1", "SIGTERM", "SIGINT", or "another signal".
  static const char* name(int signal);

 private:
  bool first_ = false;
};

}  // namespace fulgur
