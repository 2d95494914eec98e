#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace fulgur {

/// Which clients of a server rank are gone: their connection closed (the
/// process ended, killed or not, and its kernel closed the socket) or went
/// silent past ZeroMQ's heartbeat time-out (a host that vanished), and they
/// did not come back. EnsembleServer stops waiting for their goodbyes.
///
/// A monitor socket reports each closed connection by its file descriptor;
/// each message says which descriptor it came over (ZMQ_SRCFD). The clients
/// last heard over a closed descriptor become suspects, and the router
/// (ZMQ_ROUTER_MANDATORY) is asked whether each one's route is still there:
/// an unroutable one is gone. A descriptor the kernel gave to a new
/// connection meanwhile only adds a suspect whose route is there (alive).
///
///   ConnectionWatch watch(context, router, "inproc://ensemble-monitor-0");
///   watch.heard(client, fd);                 // each message
///   watch.read_events();                     // when watch.monitor() is readable
///   for (uint64_t c : watch.check(unroutable)) ...;  // gone now
class ConnectionWatch {
 public:
  /// Starts `router`'s monitor at `address` (inproc) and connects to it in `context`.
  ConnectionWatch(void* context, void* router, const std::string& address);
  ~ConnectionWatch();
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  /// The monitor's socket, for zmq_poll.
  void* monitor() const { return monitor_; }
  /// A message of `client` came over descriptor `fd`: it is not gone (again).
  void heard(uint64_t client, int fd);
  /// It said goodbye: no longer watched.
  void finished(uint64_t client);
  /// Reads every queued event; the clients of each closed descriptor become suspects.
  void read_events();
  /// Asks about each suspect (at most every 100 ms): `unroutable(client)` is true when the router has no route to
  /// it. Returns the clients found gone by this call. A suspect routable for 5 s is alive (its descriptor reused).
  std::vector<uint64_t> check(const std::function<bool(uint64_t)>& unroutable);
  bool gone(uint64_t client) const { return gone_.count(client) != 0; }
  int64_t gone_count() const { return static_cast<int64_t>(gone_.size()); }
  /// Connections closed so far (any client's, a goodbye's too).
  int64_t closed() const { return closed_; }

 private:
  using Clock = std::chrono::steady_clock;
  void* router_ = nullptr;
  void* monitor_ = nullptr;
  std::unordered_map<uint64_t, int> fd_of_;
  std::unordered_map<int, std::set<uint64_t>> clients_on_;
  /// Suspects: when first suspected.
  std::map<uint64_t, Clock::time_point> suspects_;
  std::set<uint64_t> gone_;
  Clock::time_point next_check_{};
  int64_t closed_ = 0;
};

}  // namespace fulgur
