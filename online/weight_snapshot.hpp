#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace fulgur {

/// The weights an OnlineTrainer last published: copies of a module's
/// parameters and buffers taken between two optimizer steps, replaced as a
/// whole, so a reader sees one step's weights and never a half-updated set.
class WeightSnapshot {
 public:
  /// Copies `tensors` (a module's parameters, then its buffers, whole) as
  /// the weights of `step`.
  void publish(const std::vector<torch::Tensor>& tensors, int64_t step);
  /// Copies the latest weights into `module` (same architecture) when they
  /// are newer than `have_step`; returns their step (-1: none published).
  int64_t copy_to(torch::nn::Module& module, int64_t have_step) const;
  /// The step of the latest weights (-1: none published yet).
  int64_t step() const;

 private:
  struct Weights {
    int64_t step = -1;
    std::vector<torch::Tensor> tensors;  // parameters, then buffers
  };
  mutable std::mutex mutex_;
  std::shared_ptr<const Weights> latest_;
};

}  // namespace fulgur
