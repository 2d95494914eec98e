#include <fulgur/datamodules/datasets/tensor_dataset.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

void check_index(int64_t index, int64_t size, const char* where) {
  if (index < 0 || index >= size) {
    throw std::out_of_range(std::string(where) + " index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size) + ")");
  }
}

}  // namespace

TensorDataset::TensorDataset(torch::Tensor inputs, torch::Tensor targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (!inputs_.defined() || inputs_.dim() == 0) {
    throw std::invalid_argument("[TensorDataset::TensorDataset] inputs must be a tensor with a first (example) dimension");
  }
  if (!targets_.defined() || targets_.dim() == 0) {
    throw std::invalid_argument("[TensorDataset::TensorDataset] targets must be a tensor with a first (example) dimension");
  }
  if (inputs_.size(0) != targets_.size(0)) {
    throw std::invalid_argument("[TensorDataset::TensorDataset] inputs have " + std::to_string(inputs_.size(0)) +
                                " rows but targets have " + std::to_string(targets_.size(0)) +
                                "; both need one row per example");
  }
}

Example TensorDataset::get(int64_t index) const {
  check_index(index, size(), "[TensorDataset::get]");
  return {inputs_[index], targets_[index], {}};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) throw std::invalid_argument("[TensorDataset::get_batch] indices is empty; a batch needs at least one example");
  for (const int64_t index : indices) check_index(index, size(), "[TensorDataset::get_batch]");
  const torch::Tensor rows = torch::tensor(indices, torch::kLong).to(inputs_.device());
  const torch::Tensor target_rows = targets_.device() == inputs_.device() ? rows : rows.to(targets_.device());
  return {inputs_.index_select(0, rows), targets_.index_select(0, target_rows)};
}

}  // namespace fulgur
