#pragma once
#include <cstdint>

namespace fulgur {

/// What send() does when the client's queue is full (the server is slow or away).
enum class WhenQueueFull {
  /// send() waits for room (until half the queue went out: one wake-up per half a queue, not per message):
  /// the solver slows to the server's pace.
  Block,
  /// The oldest queued message is dropped (counted): the solver never waits.
  DropOldest,
};

struct EnsembleClientOptions {
  /// Messages (send() calls) queued for the network at most; also the
  /// unacknowledged messages kept per server rank at most.
  int64_t queue_capacity = 64;
  WhenQueueFull when_full = WhenQueueFull::Block;
  /// How long the constructor waits for the rendezvous file (a client may start before its server).
  double connect_timeout_s = 60.0;
  /// How long close() waits for the queue to drain and be acknowledged, and
  /// for the goodbyes' acknowledgements; what is still queued then is counted as unsent.
  double close_timeout_s = 60.0;
  /// Server ranks this client sends to (0: every rank). With M ranks it
  /// connects to `ranks` of them, from its client id on (id mod M, the next
  /// ones): each rank then holds about N * ranks / M connections of N
  /// clients instead of N (its limit on open files).
  int64_t ranks = 0;
};

}  // namespace fulgur
