#pragma once

namespace fulgur {

/// A DataLoader that can run dry for good (a stream whose producer ended):
/// an epoch it cuts short then ends fit instead of starting another.
class Exhaustible {
 public:
  virtual ~Exhaustible() = default;
  /// True once the loader will never yield a batch again.
  virtual bool exhausted() const = 0;
};

}  // namespace fulgur
