#pragma once
#include <cstdint>

namespace fulgur {

/// A client's own account of its samples: every sample given to send() is
/// in exactly one of sent, dropped and queued.
struct EnsembleClientCounts {
  /// Handed to the network (the server's accounting says what arrived).
  int64_t sent = 0;
  /// Dropped from a full queue (WhenQueueFull::DropOldest).
  int64_t dropped = 0;
  /// Still queued when close() gave up waiting, or queued now.
  int64_t queued = 0;
  /// Messages sent again because a rank did not acknowledge them within its
  /// time-out (ResendTimer); the server drops the copies it holds.
  int64_t resent = 0;
  /// After close(): the server ranks that had not acknowledged every
  /// message sent to them and the goodbye when close() gave up
  /// (close_timeout_s); 0 when everything was acknowledged.
  int64_t unacknowledged_ranks = 0;
  /// True when close() ended with everything sent and acknowledged.
  bool acknowledged() const { return queued == 0 && unacknowledged_ranks == 0; }
};

}  // namespace fulgur
