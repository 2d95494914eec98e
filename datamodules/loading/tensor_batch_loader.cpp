#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

class TensorBatchIterator : public BatchIterator {
 public:
  TensorBatchIterator(std::shared_ptr<const std::vector<Batch>> batches, size_t first)
      : batches_(std::move(batches)), next_(first) {}

  std::optional<Batch> next() override {
    if (next_ >= batches_->size()) return std::nullopt;
    return (*batches_)[next_++];
  }

 private:
  std::shared_ptr<const std::vector<Batch>> batches_;
  size_t next_;
};

}  // namespace

TensorBatchLoader::TensorBatchLoader(std::vector<Batch> batches)
    : batches_(std::make_shared<const std::vector<Batch>>(std::move(batches))) {}

void TensorBatchLoader::shard(const Shard& shard) {
  if (shard.rank != 0 || warned_) return;
  warned_ = true;
  std::cerr << "fulgur: warning: TensorBatchLoader does not shard: each of the " << shard.num_replicas
            << " processes trains on the " << size() << " batches it holds (use a DatasetLoader to split the data)"
            << std::endl;
}

std::unique_ptr<BatchIterator> TensorBatchLoader::iterate(int64_t first_batch) {
  if (first_batch < 0 || first_batch > size()) {
    throw std::out_of_range("[TensorBatchLoader::iterate] first_batch " + std::to_string(first_batch) +
                            " is outside [0, " + std::to_string(size()) + "]");
  }
  return std::make_unique<TensorBatchIterator>(batches_, static_cast<size_t>(first_batch));
}

}  // namespace fulgur
