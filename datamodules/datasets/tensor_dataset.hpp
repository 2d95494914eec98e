#pragma once

#include <fulgur/datamodules/loading/dataset.hpp>

namespace fulgur {

/// A Dataset over two tensors already in memory: row i of `inputs` is the
/// input of example i and row i of `targets` its target. get_batch() gathers
/// rows with index_select, so batches cost one copy, not one per example.
/// Targets may have any dtype and shape: class indices ([n] int64), floats
/// for regression ([n] or [n, k]), masks ([n, H, W]).
class TensorDataset : public Dataset {
 public:
  TensorDataset(torch::Tensor inputs, torch::Tensor targets);

  int64_t size() const override { return inputs_.size(0); }
  Example get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;

  const torch::Tensor& inputs() const { return inputs_; }
  const torch::Tensor& targets() const { return targets_; }

 private:
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

}  // namespace fulgur
