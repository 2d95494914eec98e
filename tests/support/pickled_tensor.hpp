#pragma once

#include "test_support.hpp"

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fulgur::testing {

/// The tensor a probe or example wrote with torch::pickle_save (readable by
/// Python's torch.load too).
inline torch::Tensor load_pickled_tensor(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  return torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toTensor();
}

}  // namespace fulgur::testing
