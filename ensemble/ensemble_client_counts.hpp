#pragma once
#include <cstdint>

namespace fulgur {

/// A client's own account of its samples: every sample given to send() is
/// in exactly one of these.
struct EnsembleClientCounts {
  /// Handed to the network (the server's accounting says what arrived).
  int64_t sent = 0;
  /// Dropped from a full queue (WhenQueueFull::DropOldest).
  int64_t dropped = 0;
  /// Still queued when close() gave up waiting, or queued now.
  int64_t queued = 0;
};

}  // namespace fulgur
