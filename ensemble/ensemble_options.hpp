#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

namespace fulgur {

/// An ensemble server's network and stop rule (EnsembleServer; the
/// `ensemble:` section of fulgur_serve's YAML file).
struct EnsembleOptions {
  /// The rendezvous file (ensemble.rendezvous) and the accounting
  /// (ensemble_accounting.csv) go here; rank 0 writes them.
  std::filesystem::path run_dir = "ensemble_run";
  /// serve() ends once this many clients said goodbye (0: only on the
  /// trainer's max_steps, the time limit or a stop signal).
  int64_t expected_clients = 0;
  /// ... and training took at least this many steps (the last samples trained on).
  int64_t min_steps = 0;
  /// The name or address clients reach this rank by; empty: the host name.
  std::string host;
  /// The port each rank binds (0: any free one; the rendezvous file says which).
  int64_t port = 0;
  /// Larger messages are refused (counted) before anything is allocated.
  int64_t max_message_bytes = int64_t{256} << 20;
  /// serve() ends after this many seconds (0: no limit).
  double time_limit_s = 0.0;
  /// After training stopped, how long serve() still waits for goodbyes and
  /// samples in flight, so that they are counted (received, not trained).
  double drain_s = 5.0;
  /// A client's connection silent this long (ZeroMQ's heartbeat: a ping
  /// every fifth of it, unanswered) is closed: a host that vanished. A client
  /// whose connection closed without a goodbye, and that did not come back,
  /// is gone: serve() does not wait for its goodbye (0: no heartbeat; a
  /// killed process's connection still closes at once).
  double client_timeout_s = 10.0;
};

}  // namespace fulgur
