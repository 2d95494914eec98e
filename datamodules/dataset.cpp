#include <fulgur/datamodules/dataset.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <sstream>
#include <stdexcept>

namespace fulgur {

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) throw std::invalid_argument("[Dataset::get_batch] indices is empty; a batch needs at least one example");
  std::vector<torch::Tensor> inputs;
  std::vector<int64_t> targets;
  inputs.reserve(indices.size());
  targets.reserve(indices.size());
  for (const int64_t index : indices) {
    Example example = get(index);
    // torch::stack's own error names neither the sample nor both shapes;
    // mismatched image sizes are a common data bug, so say which ones.
    if (!inputs.empty() && example.input.sizes() != inputs.front().sizes()) {
      std::ostringstream message;
      message << "[Dataset::get_batch] example " << index << " has input shape " << example.input.sizes()
              << " but example " << indices.front() << " has " << inputs.front().sizes()
              << "; all inputs of a batch must have the same shape";
      throw DataError(message.str());
    }
    inputs.push_back(std::move(example.input));
    targets.push_back(example.target);
  }
  return {torch::stack(inputs), torch::tensor(targets, torch::kLong)};
}

}  // namespace fulgur
