#include <fulgur/modules/batch.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <vector>

namespace fulgur {

const torch::Tensor& Batch::operator[](const std::string& name) const {
  const auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& entry : tensors) names.push_back(entry.first);
  throw std::out_of_range(fmt::format("[Batch::operator[]] the batch has no tensor '{}' (it has: input, target{}{})",
                                      name, names.empty() ? "" : ", ", fmt::join(names, ", ")));
}

}  // namespace fulgur
