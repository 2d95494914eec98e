#pragma once
#include <cstdint>

namespace fulgur {

/// What a SampleStream did with the samples of one source (the `source`
/// given to push: a client of an ensemble, say).
struct SampleSourceCounts {
  int64_t pushed = 0;
  /// Drawn into a training batch at least once.
  int64_t trained = 0;
  /// Dropped from the buffer (DropOldest, Replay's overwrites) before any batch drew them.
  int64_t evicted_untrained = 0;
};

}  // namespace fulgur
