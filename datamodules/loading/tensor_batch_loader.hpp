#pragma once

#include <fulgur/datamodules/data_loader.hpp>

#include <memory>
#include <vector>

namespace fulgur {

/// A DataLoader over batches already in memory, yielded in the given order
/// every epoch. Iterating shares the stored tensors (no copy per epoch), so
/// a step must not modify a batch in place if later epochs need it intact.
/// It does not shard: with several processes every rank trains on all the
/// batches it was given (each rank may have been given its own). shard()
/// says so once, on rank 0; give each rank its share, or use a DatasetLoader.
class TensorBatchLoader : public DataLoader {
 public:
  explicit TensorBatchLoader(std::vector<Batch> batches);

  int64_t size() const override { return static_cast<int64_t>(batches_->size()); }
  std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) override;
  void shard(const Shard& shard) override;

 private:
  // Shared with live iterators so they stay valid if the loader goes first.
  std::shared_ptr<const std::vector<Batch>> batches_;
  bool warned_ = false;
};

}  // namespace fulgur
