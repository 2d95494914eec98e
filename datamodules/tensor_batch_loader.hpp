#pragma once

#include <fulgur/datamodules/data_loader.hpp>

#include <memory>
#include <vector>

namespace fulgur {

/// A DataLoader over batches already in memory, yielded in the given order
/// every epoch. Iterating shares the stored tensors (no copy per epoch), so
/// a step must not modify a batch in place if later epochs need it intact.
class TensorBatchLoader : public DataLoader {
 public:
  explicit TensorBatchLoader(std::vector<Batch> batches);

  int64_t size() const override { return static_cast<int64_t>(batches_->size()); }
  std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) override;

 private:
  // Shared with live iterators so they stay valid if the loader goes first.
  std::shared_ptr<const std::vector<Batch>> batches_;
};

}  // namespace fulgur
