#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/datamodules/exhaustible.hpp>
#include <fulgur/online/sample_source_counts.hpp>
#include <fulgur/online/sample_stream_options.hpp>

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace fulgur {

/// A bounded, thread-safe sample buffer that a producer (a simulation)
/// pushes into and that training reads as a DataLoader: give it to
/// Trainer::fit through a StreamDataModule on another thread, or to an
/// OnlineTrainer. push() copies the samples, so the caller may reuse its
/// memory at once. An epoch is `steps_per_epoch` batches; end() ends the
/// stream, and fit ends once the stream has nothing left.
///
///   auto stream = std::make_shared<SampleStream>(SampleStreamOptions{.capacity = 256, .batch_size = 8});
///   stream->push(inputs, targets);   // first dimension: samples
///   stream->end();
class SampleStream : public DataLoader, public Exhaustible {
 public:
  explicit SampleStream(SampleStreamOptions options);

  /// Copies `inputs` and `targets` (first dimension: the number of samples,
  /// the same in both) into the buffer. Every push must have the first
  /// one's per-sample shapes and dtypes (std::invalid_argument names the
  /// difference). With WhenFull::Block it waits for room; after end() it
  /// throws std::logic_error. `source` (any number; -1: none) tags the
  /// samples for counts_by_source().
  void push(const torch::Tensor& inputs, const torch::Tensor& targets, int64_t source = -1);
  /// The same from the caller's memory (C order), copied before it returns:
  /// `input_shape` and `target_shape` include the sample count first.
  void push(const float* inputs, at::IntArrayRef input_shape, const float* targets, at::IntArrayRef target_shape);
  void push(const double* inputs, at::IntArrayRef input_shape, const double* targets, at::IntArrayRef target_shape);
  /// End of stream: no more pushes. Block and DropOldest still yield the
  /// samples buffered (the last batch may be smaller); Replay yields no more.
  void end();
  bool ended() const;

  /// The next batch, waiting for the producer when there are too few
  /// samples; nullopt once the stream ended and nothing is left, or as soon
  /// as `stop` (asked every 50 ms while it waits, under the
  /// stream's lock: it must not call the stream) says so.
  std::optional<Batch> next_batch(const std::function<bool()>& stop = {});

  /// The buffered samples, oldest first, stacked (first dimension: samples),
  /// for a checkpoint; undefined tensors when the buffer is empty. push()
  /// puts them back.
  std::pair<torch::Tensor, torch::Tensor> buffered_samples() const;

  /// Samples pushed, dropped (DropOldest, and Replay's overwritten ones)
  /// and buffered now.
  int64_t pushed() const;
  int64_t dropped() const;
  int64_t buffered() const;
  /// Samples drawn into a training batch at least once (each counted when
  /// first drawn), in all and per push() `source`.
  int64_t trained() const;
  std::map<int64_t, SampleSourceCounts> counts_by_source() const;
  const SampleStreamOptions& options() const { return options_; }

  // --- DataLoader -----------------------------------------------------------------
  int64_t size() const override { return options_.steps_per_epoch; }
  /// Each rank pushes its own samples: nothing to split.
  void shard(const Shard& shard) override { (void)shard; }
  std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) override;
  /// Ended, and nothing left to yield.
  bool exhausted() const override;

 private:
  /// Checks a push against the first one's shapes and dtypes and, at the
  /// first push, allocates the ring (under the lock).
  void check_sample(const torch::Tensor& inputs, const torch::Tensor& targets);
  bool can_yield() const;
  /// Copies the rows `logical` (0: the oldest buffered sample) out of the ring.
  std::pair<torch::Tensor, torch::Tensor> gather(const std::vector<int64_t>& logical) const;
  Batch take_fifo();
  Batch draw_replay();
  /// Counts the rows `logical` as trained (the first time each is drawn).
  void mark_trained(const std::vector<int64_t>& logical);

  SampleStreamOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  /// The ring: `capacity` samples of inputs and of targets, allocated at the
  /// first push; a push copies rows in, a batch copies rows out, so the lock
  /// is held for copies only.
  torch::Tensor inputs_, targets_;
  int64_t head_ = 0;  // the row of the oldest sample
  int64_t size_ = 0;  // samples buffered
  std::optional<std::vector<int64_t>> input_shape_, target_shape_;
  std::mt19937_64 generator_;
  int64_t pushed_ = 0;
  int64_t dropped_ = 0;
  /// Per ring row: its sample's source, and whether a batch drew it yet.
  std::vector<int64_t> row_source_;
  std::vector<char> row_trained_;
  std::map<int64_t, SampleSourceCounts> by_source_;
  bool ended_ = false;
};

}  // namespace fulgur
