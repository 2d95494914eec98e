#include <fulgur/datamodules/loading/dataset.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <fmt/format.h>

#include <map>
#include <sstream>
#include <stdexcept>

namespace fulgur {

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) throw std::invalid_argument("[Dataset::get_batch] indices is empty; a batch needs at least one example");
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (const int64_t index : indices) examples.push_back(get(index));
  return collate(std::move(examples));
}

namespace {

// torch::stack's own error names neither the sample nor both shapes;
// mismatched image sizes are a common data bug, so say which ones.
torch::Tensor stack_checked(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].sizes() != tensors.front().sizes()) {
      std::ostringstream message;
      message << "[Dataset::collate] example " << i << " of the batch has " << what << " shape " << tensors[i].sizes()
              << " but example 0 has " << tensors.front().sizes() << "; all " << what
              << "s of a batch must have the same shape (or override Dataset::collate, e.g. with pad_sequences)";
      throw DataError(message.str());
    }
  }
  return torch::stack(tensors);
}

}  // namespace

Batch Dataset::collate(std::vector<Example> examples) const {
  if (examples.empty()) throw std::invalid_argument("[Dataset::collate] no examples; a batch needs at least one");
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> targets;
  std::map<std::string, std::vector<torch::Tensor>> named;
  for (auto& example : examples) {
    inputs.push_back(std::move(example.input));
    if (!example.target.defined()) throw DataError("[Dataset::collate] an example of the batch has no target");
    targets.push_back(std::move(example.target));
    if (example.tensors.size() != examples.front().tensors.size()) {
      throw DataError("[Dataset::collate] the examples of a batch carry different named tensors");
    }
    for (auto& [name, tensor] : example.tensors) named[name].push_back(std::move(tensor));
  }
  Batch batch{stack_checked(inputs, "input"), stack_checked(targets, "target"), {}};
  for (const auto& [name, tensors] : named) {
    if (tensors.size() != examples.size()) {
      throw DataError(fmt::format("[Dataset::collate] only some examples of the batch carry tensor '{}'", name));
    }
    batch.tensors.emplace(name, stack_checked(tensors, "'" + name + "'"));
  }
  return batch;
}

}  // namespace fulgur
