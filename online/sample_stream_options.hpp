#pragma once

#include <fulgur/online/when_full.hpp>

#include <cstdint>

namespace fulgur {

/// How a SampleStream buffers and batches what a producer pushes.
struct SampleStreamOptions {
  /// Samples the buffer holds at most; the first push allocates room for
  /// all of them (capacity times one sample's inputs and targets).
  int64_t capacity = 1024;
  WhenFull when_full = WhenFull::Block;
  /// Samples per training batch.
  int64_t batch_size = 32;
  /// Batches one epoch yields (DataLoader::size()): a stream has no length.
  int64_t steps_per_epoch = 100;
  /// Replay only: the seed of the uniform sampling.
  uint64_t seed = 0;
  /// Replay only: samples the buffer must hold before the first batch is
  /// drawn (0: batch_size).
  int64_t min_samples = 0;
};

}  // namespace fulgur
