#pragma once

#include <fulgur/datamodules/data_loader.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// Lightning's CombinedLoader: several named loaders read as one training
/// loader. Each batch holds the batch of every loader that has one, its
/// tensors under "<name>/input", "<name>/target" and "<name>/<tensor>";
/// part(batch, name) gives one loader's Batch back, and `input`/`target`
/// are the first loader's (so Batch::size() is its batch size). Modes, as
/// Lightning's:
///
/// - max_size_cycle (default): as many batches as the longest loader; a
///   shorter one starts over when it runs out, in the same epoch's order.
/// - max_size: as many as the longest; a loader that ran out is absent.
/// - min_size: as many as the shortest.
/// - sequential: every batch of the first loader, then of the second, ...:
///   each batch is one loader's (its part, plus "dataloader_idx").
///
/// Each loader is sharded over the processes and reshuffled per epoch as it
/// would be alone, and a resumed fit continues mid-epoch where it stopped.
///
///   auto train = std::make_shared<fulgur::CombinedLoader>(
///       std::vector<std::pair<std::string, std::shared_ptr<fulgur::DataLoader>>>{{"clean", clean}, {"noisy", noisy}});
///   // in training_step: fulgur::CombinedLoader::part(batch, "noisy").input
class CombinedLoader : public DataLoader {
 public:
  enum class Mode { MaxSizeCycle, MaxSize, MinSize, Sequential };
  using Loaders = std::vector<std::pair<std::string, std::shared_ptr<DataLoader>>>;

  /// Throws std::invalid_argument when there is no loader, one is null, or
  /// a name repeats, is empty or holds '/'.
  explicit CombinedLoader(Loaders loaders, Mode mode = Mode::MaxSizeCycle);
  /// "max_size_cycle", "max_size", "min_size" or "sequential"; anything else
  /// is std::invalid_argument listing them.
  static Mode parse_mode(const std::string& mode);

  int64_t size() const override;
  void set_epoch(int64_t epoch) override;
  void shard(const Shard& shard) override;
  void set_device(const torch::Device& device) override;
  std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) override;

  /// Loader `name`'s batch inside a combined one; std::out_of_range naming
  /// it when the batch has none (max_size: that loader ran out).
  static Batch part(const Batch& batch, const std::string& name);
  /// Whether the combined batch holds loader `name`'s batch.
  static bool has_part(const Batch& batch, const std::string& name);

  const Loaders& loaders() const { return loaders_; }
  Mode mode() const { return mode_; }

 private:
  class Iterator;
  Loaders loaders_;
  Mode mode_;
};

}  // namespace fulgur
