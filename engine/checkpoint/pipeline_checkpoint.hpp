#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace fulgur {

class Strategy;

/// Whole checkpoints of a pipeline (a PipelineModule on a mesh with pp > 1).
/// Rank 0 holds only the first stage, so on save every stage's parameters
/// and optimizer state come to it and it writes one file in the layout one
/// process writes: parameter names as one process has them, optimizer state
/// numbered in one process's parameter order. The file loads into one
/// process, and into any pipeline: each rank takes its stages' part.
/// Optimizers with one parameter group; made and used on every rank alike
/// (its constructor is a collective).
class PipelineCheckpoint {
 public:
  PipelineCheckpoint(Strategy& strategy, torch::nn::Module& module,
                     std::vector<const torch::optim::Optimizer*> optimizers);

  /// `checkpoint` (this rank's dump, tensor-parallel parts already
  /// gathered) becomes the whole model's on rank 0. Every rank calls it.
  void gather(Checkpoint& checkpoint) const;
  /// This rank's parameters of a whole `state_dict`.
  c10::Dict<std::string, torch::Tensor> local_weights(const c10::Dict<std::string, torch::Tensor>& whole) const;
  /// Optimizer `index`'s whole state (one process's numbering) as this
  /// rank's optimizer numbers its parameters.
  c10::impl::GenericDict local_optimizer_state(size_t index, const c10::impl::GenericDict& whole) const;
  /// Every parameter's name, in one process's order (its optimizers' numbering).
  std::vector<std::string> whole_order() const;

 private:
  /// Optimizer `index`'s parameter names, in its numbering.
  std::vector<std::string> optimizer_names(size_t index) const;

  Strategy& strategy_;
  torch::nn::Module& module_;
  std::vector<const torch::optim::Optimizer*> optimizers_;
  std::map<std::string, int64_t> whole_index_;  // parameter name -> its number in one process
};

}  // namespace fulgur
