#pragma once

#include <c10/util/intrusive_ptr.h>

#include <string>

namespace c10d {
class Store;
}  // namespace c10d

namespace fulgur {

/// The rendezvous store a launcher serves to the ranks it starts, for as
/// long as the launcher lives (torchrun's agent store does the same). When
/// rank 0 served each group's store itself, a program's next Trainer (or a
/// probe's next run) reopened it on the same port, and a rank that came
/// early could meet the closing store of the group before. The ranks are
/// told by FULGUR_LAUNCHER_STORE=1 (LocalLauncherOptions::rank_environment)
/// and every group of theirs takes a key space of its own in it
/// (ProcessGroupOptions::store_hosted_externally).
///
/// Served by the launcher of node 0 only; its thread (c10d's TCPStore
/// server) lives as long as the object, which the launcher holds while its
/// ranks run.
class LauncherStore {
 public:
  /// Serves on `address`:`port`, on 127.0.0.1 only when `all_local` (c10d
  /// stores have no authentication). Port 0 binds a free port where
  /// `all_local`; otherwise a free port of `address` is picked first.
  LauncherStore(const std::string& address, int port, bool all_local);
  ~LauncherStore();
  LauncherStore(const LauncherStore&) = delete;
  LauncherStore& operator=(const LauncherStore&) = delete;

  /// The port the ranks are to connect to (MASTER_PORT).
  int port() const { return port_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int port_ = 0;
};

}  // namespace fulgur
