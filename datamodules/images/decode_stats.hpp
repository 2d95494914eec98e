#pragma once

#include <fulgur/datamodules/images/codecs/decode_counts.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace fulgur {

/// The decoding engines' counts of one dataset over a run, shared by its
/// epoch views and written by every loader thread: per batch (record), per
/// epoch (the line at its end) and for the run. Kept per epoch because
/// persistent workers may decode the next epoch's first batches before the
/// current one is over.
class DecodeStats {
 public:
  /// `where`: the device, for the lines (`cuda:0`).
  explicit DecodeStats(std::string where);

  /// Adds one batch of epoch `epoch`. True for the epoch's first batch with
  /// images decoded one by one on the CPU: the caller warns once per epoch.
  bool record(int64_t epoch, const DecodeCounts& batch);
  /// Ends epoch `epoch`: its one line
  /// (`decode on cuda:0, epoch 3: 2560 images in 10 batches: hardware ...`),
  /// and forgets its counts (the run's stay).
  std::string finish_epoch(int64_t epoch);

  DecodeCounts run() const;
  int64_t run_batches() const;
  /// The counts of an epoch not finished yet (zero for any other).
  DecodeCounts epoch(int64_t epoch) const;
  /// The last batch recorded (any epoch, any thread).
  DecodeCounts last_batch() const;
  const std::string& where() const { return where_; }

 private:
  struct Epoch {
    DecodeCounts counts;
    int64_t batches = 0;
    bool warned = false;
  };
  const std::string where_;
  mutable std::mutex mutex_;
  std::map<int64_t, Epoch> epochs_;
  DecodeCounts run_;
  int64_t run_batches_ = 0;
  DecodeCounts last_batch_;
};

}  // namespace fulgur
