#pragma once

namespace fulgur {

/// What SampleStream::push does when the buffer holds `capacity` samples.
enum class WhenFull {
  /// The producer waits until training took enough samples (nothing is lost).
  Block,
  /// The oldest samples make room (the producer never waits; training sees
  /// the newest data, and SampleStream::dropped() counts what it missed).
  DropOldest,
  /// A replay buffer: the newest `capacity` samples stay, and every batch is
  /// drawn from them uniformly at random (seeded), so training takes its
  /// steps at its own pace however fast the producer is.
  Replay,
};

}  // namespace fulgur
